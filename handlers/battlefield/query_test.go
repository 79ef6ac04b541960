package battlefield

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wirebf "github.com/gamegate/gamegate/wire/battlefield"
)

func protocol() *QueryProtocol {
	return &QueryProtocol{TCPExchange: query.TCPExchange{Timeout: 2 * time.Second, Retries: -1}}
}

func TestStatus(t *testing.T) {
	s := testutil.ExampleBattlefield()
	testutil.StartBattlefield(t, s)
	st, err := protocol().Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gâte BF4 #1" || st.Map != "MP_Prison" || st.NumPlayers != 2 || st.MaxPlayers != 64 || !st.Password ||
		st.Version != "179665" || st.Connect != "127.0.0.1:25200" || st.Address != s.Addr || st.Protocol != "battlefield" {
		t.Errorf("status: got %+v", st)
	}
	teams, _ := st.Raw["teams"].([]any)
	if len(teams) != 2 || teams[0].(map[string]any)["tickets"] != 287.5 || st.Raw["ranked"] != true || st.Raw["uptime"] != 3600 ||
		st.Raw["ip"] != "127.0.0.1:25200" || st.Raw["country"] != "NL" || st.Raw["quickmatch"] != false {
		t.Errorf("raw: got %v", st.Raw)
	}
	if len(st.Players) != 2 || st.Players[0].Name != "Zoë" || st.Players[0].Raw["team"] != 1 || st.Players[0].Raw["squad"] != 2 ||
		st.Players[0].Raw["guid"] != "EA_1" || st.Players[1].Raw["ping"] != 80 {
		t.Errorf("players: got %+v", st.Players)
	}
	raw, err := protocol().Command(context.Background(), s.Addr, "raw", nil)
	if m, ok := raw.(map[string]any); err != nil || !ok || m["region"] != "EU" {
		t.Errorf("raw command: got %v, %v", raw, err)
	}
}

// A Bad Company 2 server names its game mod and a field of its own before
// the address; a server that names no address gets GameDig's guess of the
// game port from the default query port.
func TestServerInfoVariants(t *testing.T) {
	bc2 := words{[]byte("BC2 server"), []byte("1"), []byte("32"), []byte("RUSH"), []byte("Levels/MP_002"), []byte("0"), []byte("1"),
		[]byte("0"), []byte("0"), []byte(""), []byte("true"), []byte("true"), []byte("false"), []byte("10"), []byte("5"),
		[]byte("BC2"), []byte("x"), []byte("10.0.0.1:19567")}
	st, err := serverInfo(bc2, "127.0.0.1:48888")
	if err != nil || st.Connect != "127.0.0.1:19567" || st.Raw["ip"] != "10.0.0.1:19567" {
		t.Errorf("BC2: got %+v, %v", st, err)
	}
	st, err = serverInfo(bc2[:15], "127.0.0.1:48888")
	if err != nil || st.Connect != "127.0.0.1:7673" || st.Raw["ip"] != nil {
		t.Errorf("no address: got %+v, %v", st, err)
	}
	if _, err := serverInfo(bc2[:8], "127.0.0.1:48888"); !errors.Is(err, ErrShort) {
		t.Errorf("eight words: got %v, want ErrShort", err)
	}
	lying := append(words{}, bc2[:10]...)
	lying[7] = []byte("1000000")
	if _, err := serverInfo(lying, "127.0.0.1:48888"); !errors.Is(err, ErrShort) {
		t.Errorf("a team count past the words: got %v, want ErrShort", err)
	}
}

func TestPlayersBounds(t *testing.T) {
	for name, w := range map[string]words{
		"fields past the words":  {[]byte("5"), []byte("name")},
		"too many fields":        {[]byte("100000")},
		"players past the words": {[]byte("1"), []byte("name"), []byte("1000000"), []byte("a")},
		"players without fields": {[]byte("0"), []byte("3")},
		"negative players":       {[]byte("1"), []byte("name"), []byte("-1")},
	} {
		if _, err := players(w); !errors.Is(err, ErrShort) {
			t.Errorf("%s: got %v, want ErrShort", name, err)
		}
	}
}

// serveRaw answers every connection with reply (given the first request's
// sequence), then holds it open until the client closes it, or closes it
// at once when hold is false.
func serveRaw(t *testing.T, reply func(seq uint32) []byte, hold bool) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		var h [12]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		_, _ = io.CopyN(io.Discard, c, int64(binary.LittleEndian.Uint32(h[4:]))-12)
		_, _ = c.Write(reply(binary.LittleEndian.Uint32(h[:])))
		if hold {
			_, _ = io.Copy(io.Discard, c)
		}
	})
}

func packet(t *testing.T, seq uint32, response bool, words ...string) []byte {
	p := wirebf.Packet{Sequence: seq, Response: response}
	for _, w := range words {
		p.Words = append(p.Words, []byte(w))
	}
	b, err := p.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hostile and broken answers end the query with a clear error, never a
// hang past the attempt or memory sized by the server's length fields.
func TestStatusBadAnswers(t *testing.T) {
	huge := func(uint32) []byte { return []byte{1, 0, 0, 0x40, 0xf0, 0xff, 0xff, 0x7f} } // a 2 GiB packet
	many := func(seq uint32) []byte {
		var b []byte
		for range 40 {
			b = append(b, packet(t, seq+1, true, "OK")...) // not its answer
		}
		return b
	}
	for _, c := range []struct {
		name  string
		reply func(uint32) []byte
		want  error
		typ   query.ErrorType
	}{
		{"not OK", func(seq uint32) []byte { return packet(t, seq, true, "LogInRequired") }, ErrNotOK, query.TypeBadAnswer},
		{"size past max_response_size", huge, wirebf.ErrSize, query.TypeBadAnswer},
		{"packets past max_packets", many, query.ErrTooManyPackets, query.TypeBadAnswer},
		{"short serverInfo", func(seq uint32) []byte { return packet(t, seq, true, "OK", "name") }, ErrShort, query.TypeBadAnswer},
		{"closed early", func(uint32) []byte { return []byte{1, 0} }, io.ErrUnexpectedEOF, query.TypeBadAnswer},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := serveRaw(t, c.reply, c.name != "closed early")
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := protocol().Status(context.Background(), addr)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			var e *query.Error
			if !errors.As(err, &e) || e.Type != c.typ || e.HTTPStatus != http.StatusBadGateway || !errors.Is(e.Detail, c.want) {
				t.Fatalf("got %v (%#v), want a %s error wrapping %v", err, e, c.typ, c.want)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
				t.Errorf("the query allocated %d bytes, want under 1 MiB", grown)
			}
		})
	}
}

// A server that accepts and never answers costs one attempt's timeout
// per attempt; a port nothing listens on ends the query at once.
func TestStatusSilentAndRefused(t *testing.T) {
	ln, err := net.Listen("tcp", testutil.FreeTCPAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := &QueryProtocol{TCPExchange: query.TCPExchange{Timeout: 200 * time.Millisecond, Retries: 1}}
	start := time.Now()
	_, err = p.Status(context.Background(), ln.Addr().String())
	var e *query.Error
	if !errors.As(err, &e) || e.Type != query.TypeTimeout {
		t.Errorf("silent server: got %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("silent server: %v, want about two attempts of 200ms", d)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := p.Status(context.Background(), addr); !errors.As(err, &e) || e.Type != query.TypeRefused {
		t.Errorf("closed port: got %v, want refused", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"max_response_size": {Budget: query.Budget{MaxResponseSize: 10}},
		"max_packets":       {Budget: query.Budget{MaxPackets: 1000}},
		"retries":           {Attempts: query.Attempts{Retries: 99}},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v, want an error naming it", name, err)
		}
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// A team's tickets that are not a finite number (NaN, Infinity, text) are
// null, as GameDig's parseFloat and JSON.stringify make them, and the
// status still encodes as JSON.
func TestServerInfoTicketsNotFinite(t *testing.T) {
	for _, tickets := range []string{"NaN", "Infinity", "-inf", "1e999", "tickets"} {
		w := words{[]byte("s"), []byte("1"), []byte("32"), []byte("RUSH"), []byte("m"), []byte("0"), []byte("1"),
			[]byte("1"), []byte(tickets), []byte("0"), []byte("")}
		st, err := serverInfo(w, "127.0.0.1:47200")
		if err != nil {
			t.Fatalf("%s: %v", tickets, err)
		}
		teams, _ := st.Raw["teams"].([]any)
		if len(teams) != 1 || teams[0].(map[string]any)["tickets"] != nil {
			t.Errorf("%s: teams %v, want tickets null", tickets, teams)
		}
		if _, err := json.Marshal(st); err != nil {
			t.Errorf("%s: %v", tickets, err)
		}
	}
	w := words{[]byte("s"), []byte("1"), []byte("32"), []byte("RUSH"), []byte("m"), []byte("0"), []byte("1"),
		[]byte("1"), []byte(" 12.5abc"), []byte("0"), []byte("")}
	if st, err := serverInfo(w, "127.0.0.1:47200"); err != nil || st.Raw["teams"].([]any)[0].(map[string]any)["tickets"] != 12.5 {
		t.Errorf("12.5abc: got %v, %v; want 12.5", st, err)
	}
}
