package gqp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// serve runs s on a loopback UDP socket until the test ends, answering each
// query with Answer (a real server over a real socket).
func serve(t *testing.T, s *Server) string {
	t.Helper()
	return serveFunc(t, func(from netip.AddrPort, q []byte) [][]byte {
		out, _ := s.Answer(context.Background(), from, q)
		return out
	})
}

func serveFunc(t *testing.T, answer func(from netip.AddrPort, q []byte) [][]byte) string {
	t.Helper()
	return testutil.ServeUDP(t, answer).String()
}

func testServer(t *testing.T) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{
		Identity: Identity{GameName: "ut", GameVer: "432", NetVer: "400"},
		Logins:   map[string]string{"admin": "hunter2"},
		Trusted:  []netip.Prefix{}, // loopback sources are held to the public rules
		Commands: []Command{
			{Name: "players", Run: func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
				r.AddLabeled([]byte("players"), []byte("alice"), []byte("bob"))
				return wiregqp.StatusOK
			}},
			{Name: "kick", MinArgs: 1, Protected: true, Run: func(_ context.Context, args [][]byte, r *wiregqp.Reply) wiregqp.Status {
				r.AddPair([]byte("kicked"), args[0])
				return wiregqp.StatusOK
			}},
			{Name: "rcon", Disabled: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mkQuery(names ...string) *wiregqp.Query {
	q := new(wiregqp.Query)
	for _, n := range names {
		name, args, _ := strings.Cut(n, " ")
		var a [][]byte
		if args != "" {
			for _, x := range strings.Split(args, ",") {
				a = append(a, []byte(x))
			}
		}
		q.Add([]byte(name), a...)
	}
	return q
}

func ask(t *testing.T, c *Client, addr string, q *wiregqp.Query) *wiregqp.Response {
	t.Helper()
	resp, err := c.Query(context.Background(), addr, q)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestRequiredCommands(t *testing.T) {
	addr := serve(t, testServer(t))
	c := &Client{Timeout: 2 * time.Second}
	resp := ask(t, c, addr, mkQuery("identify", "echo one,two,three", "echo single", "extensions", "players", "nothing", "rcon"))
	if len(resp.Replies) != 7 {
		t.Fatalf("got %d replies, want 7 (the pad reply removed)", len(resp.Replies))
	}
	id := resp.Replies[0]
	if id.Status != wiregqp.StatusOK || len(id.Records) != 3 || string(id.Records[0].Label) != "gamename" || string(id.Records[0].Value()) != "ut" ||
		string(id.Records[2].Value()) != "400" {
		t.Fatalf("identify: got %+v", id)
	}
	echo := resp.Replies[1]
	if len(echo.Records) != 3 || string(echo.Records[2].Value()) != "three" {
		t.Fatalf("echo with three arguments: got %+v", echo)
	}
	if one := resp.Replies[2]; one.Kind != wiregqp.ReplyText || string(one.Text) != "single" {
		t.Fatalf("echo with one argument: got %+v, want the text back", one)
	}
	if ext := resp.Replies[3]; len(ext.Records) != 1 || string(ext.Records[0].Items[0]) != "pad" {
		t.Fatalf("extensions: got %+v", ext)
	}
	if p := resp.Replies[4]; len(p.Records) != 1 || string(p.Records[0].Label) != "players" || len(p.Records[0].Items) != 2 {
		t.Fatalf("custom command: got %+v", p)
	}
	if u := resp.Replies[5]; u.Status != wiregqp.StatusUnknownCommand || string(u.Text) != "unknown command" {
		t.Fatalf("unknown command: got %+v", u)
	}
	if d := resp.Replies[6]; d.Status != wiregqp.StatusDisabled {
		t.Fatalf("disabled command: got %+v", d)
	}
}

// askChallenge sends challenge login,password from c as a client that
// follows the server's cookie: first without one, then with the cookie it
// was given. It returns the second reply.
func askChallenge(t *testing.T, c *Client, addr, login, password string) wiregqp.Reply {
	t.Helper()
	first := ask(t, c, addr, mkQuery("challenge "+login+","+password)).Replies[0]
	if first.Status != wiregqp.StatusUnauthorised || len(first.Records) != 1 || string(first.Records[0].Label) != "cookie" {
		t.Fatalf("challenge without a cookie: got %+v, want 32 with the cookie", first)
	}
	return ask(t, c, addr, mkQuery("challenge "+login+","+password+","+string(first.Records[0].Value()))).Replies[0]
}

func TestChallengeValidate(t *testing.T) {
	s := testServer(t)
	addr := serve(t, s)
	// One local port throughout: authorisation is bound to it.
	c := &Client{Timeout: 2 * time.Second, Local: testutil.FreeUDPAddr(t)}
	if r := ask(t, c, addr, mkQuery("kick bob")).Replies[0]; r.Status != wiregqp.StatusUnauthorised {
		t.Fatalf("protected command before validation: got %v, want 32", r.Status)
	}
	for cmd, usage := range map[string]string{"challenge admin": "challenge takes a login and a password", "validate": "validate takes the challenge string"} {
		if r := ask(t, c, addr, mkQuery(cmd)).Replies[0]; r.Status != wiregqp.StatusWrongArgCount || string(r.Text) != usage {
			t.Fatalf("%s: got %+v, want 22 %q", cmd, r, usage)
		}
	}
	if r := askChallenge(t, c, addr, "admin", "wrong"); r.Status != wiregqp.StatusUnauthorised || r.Kind != wiregqp.ReplyText {
		t.Fatalf("wrong password: got %+v, want 32 with a reason", r)
	}
	ch := askChallenge(t, c, addr, "admin", "hunter2")
	if ch.Status != wiregqp.StatusOK || len(ch.Records) != 1 {
		t.Fatalf("challenge: got %+v", ch)
	}
	token := string(ch.Records[0].Value())
	if r := ask(t, c, addr, mkQuery("validate nope")).Replies[0]; r.Status != wiregqp.StatusUnauthorised {
		t.Fatalf("validate with a wrong challenge: got %v, want 32", r.Status)
	}
	if r := ask(t, c, addr, mkQuery("validate "+token)).Replies[0]; r.Status != wiregqp.StatusOK || r.Kind != wiregqp.ReplyEmpty {
		t.Fatalf("validate: got %+v, want 10 with an empty reply", r)
	}
	if r := ask(t, c, addr, mkQuery("kick bob")).Replies[0]; r.Status != wiregqp.StatusOK || string(r.Records[0].Value()) != "bob" {
		t.Fatalf("protected command after validation: got %+v", r)
	}
	if r := ask(t, c, addr, mkQuery("kick")).Replies[0]; r.Status != wiregqp.StatusWrongArgCount {
		t.Fatalf("too few arguments: got %v, want 22", r.Status)
	}
	// The challenge was used up.
	if r := ask(t, c, addr, mkQuery("validate "+token)).Replies[0]; r.Status != wiregqp.StatusUnauthorised {
		t.Fatalf("second validate with the same challenge: got %v, want 32", r.Status)
	}
}

func TestNoAmplification(t *testing.T) {
	s := testServer(t)
	src := netip.MustParseAddrPort("192.0.2.1:1")
	for _, q := range []string{"\x04", "identify\x04", "players\x04", "echo\x1ex\x04", "nothing\x04", "\x01gzip\x06identify\x04", "garbage"} {
		out, v := s.Answer(context.Background(), src, []byte(q))
		n := 0
		for _, d := range out {
			n += len(d)
		}
		if n > len(q) {
			t.Fatalf("query %q: answered %d bytes (%v) to an unvalidated source, want at most %d", q, n, v, len(q))
		}
	}
	// Unpadded, the client gets no answer from a refusing server.
	addr := serve(t, s)
	_, err := (&Client{Timeout: 200 * time.Millisecond, Retries: -1, PadTo: -1}).Query(context.Background(), addr, mkQuery("identify"))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("unpadded identify: got %v, want a timeout", err)
	}
}

func TestEncodingAnswered40(t *testing.T) {
	s := testServer(t)
	out, v := s.Answer(context.Background(), netip.MustParseAddrPort("192.0.2.1:1"), []byte("\x01gzip\x06identify\x04"))
	var r wiregqp.Response
	if v != AnsweredError || len(out) != 1 || r.Decode(out[0]) != nil || r.Replies[0].Status != wiregqp.StatusUnsupportedEncoding {
		t.Fatalf("unsupported encoding: got %q (%v), want status 40", out, v)
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name   string
		answer func(q []byte) [][]byte
		check  func(error) bool
	}{
		{"garbage", func([]byte) [][]byte { return [][]byte{[]byte("\x00\xffnot gqp\x04")} }, isProtocol},
		{"too much", func([]byte) [][]byte {
			// Starts like a response, never ends: past the 8 KiB bound.
			big := [][]byte{[]byte("10identify\x1e\x11")}
			for range 10 {
				big = append(big, []byte(strings.Repeat("x", 1400)))
			}
			return big
		}, func(err error) bool { return isProtocol(err) && strings.Contains(err.Error(), "too long") }},
		{"half a response", func([]byte) [][]byte { return [][]byte{[]byte("10identify\x1e\x12gamename\x1fut")} }, isProtocol},
		{"no answer", func([]byte) [][]byte { return nil }, func(err error) bool { return errors.Is(err, ErrTimeout) }},
		{"wrong reply count", func([]byte) [][]byte { return [][]byte{[]byte("10a\x1e\x06\x1d10b\x1e\x06\x1d10c\x1e\x06\x04")} }, isProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveFunc(t, func(_ netip.AddrPort, q []byte) [][]byte { return tt.answer(q) })
			c := &Client{Timeout: 200 * time.Millisecond, Retries: -1, MaxResponse: 8 << 10}
			start := time.Now()
			_, err := c.Query(context.Background(), addr, mkQuery("identify"))
			if !tt.check(err) {
				t.Fatalf("got %v (%T)", err, err)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
}

func isProtocol(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

func TestClientRetries(t *testing.T) {
	s := testServer(t)
	var n atomic.Int32
	addr := serveFunc(t, func(from netip.AddrPort, q []byte) [][]byte {
		if n.Add(1) == 1 {
			return nil // the first query is lost
		}
		out, _ := s.Answer(context.Background(), from, q)
		return out
	})
	c := &Client{Timeout: 200 * time.Millisecond, Retries: 2}
	resp, err := c.Query(context.Background(), addr, mkQuery("identify"))
	if err != nil || resp.Replies[0].Status != wiregqp.StatusOK || n.Load() != 2 {
		t.Fatalf("got %v after %d queries, want an answer to the second", err, n.Load())
	}
}

func TestLargeResponseSplitForValidatedSource(t *testing.T) {
	big := strings.Repeat("p", 200)
	s, err := NewServer(ServerConfig{
		Logins:  map[string]string{"a": "b"},
		Trusted: []netip.Prefix{},
		Commands: []Command{{Name: "all", Run: func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
			for i := range 40 {
				r.AddPair([]byte{'k', byte('0' + i%10)}, []byte(big))
			}
			return wiregqp.StatusOK
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s)
	c := &Client{Timeout: time.Second, Local: testutil.FreeUDPAddr(t)}
	token := string(askChallenge(t, c, addr, "a", "b").Records[0].Value())
	ask(t, c, addr, mkQuery("validate "+token))
	resp := ask(t, c, addr, mkQuery("all"))
	if r := resp.Replies[0]; len(r.Records) != 40 || string(r.Records[39].Value()) != big {
		t.Fatalf("a ~8 KB answer over several datagrams: got %d records", len(r.Records))
	}
}

func TestServerRefusesEmptyPasswords(t *testing.T) {
	if _, err := NewServer(ServerConfig{Logins: map[string]string{"admin": ""}}); err == nil {
		t.Fatal("got nil error for an empty password, want one")
	}
}

// An unvalidated source never gets more datagrams than it sent, even when
// the answer would be cut into several for a validated one.
func TestUnvalidatedAnswerIsOneDatagram(t *testing.T) {
	s, err := NewServer(ServerConfig{MaxDatagram: 64})
	if err != nil {
		t.Fatal(err)
	}
	q := mkQuery("echo "+strings.Repeat("x", 600), "pad "+strings.Repeat(".", 100))
	b, _ := q.AppendTo(nil)
	out, v := s.Answer(context.Background(), netip.MustParseAddrPort("192.0.2.1:1"), b)
	if v != Answered || len(out) != 1 || len(out[0]) > len(b) {
		t.Fatalf("got %d datagrams (%v), want one no larger than the %d-byte query", len(out), v, len(b))
	}
}

// A reply that cannot be encoded becomes 31; the others are unaffected.
func TestUnencodableReplyAloneBecomes31(t *testing.T) {
	s, err := NewServer(ServerConfig{Identity: Identity{GameName: "g"}, Commands: []Command{{Name: "bad",
		Run: func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
			r.AddString([]byte("line\nbreak")) // a control byte in a string
			return wiregqp.StatusOK
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := mkQuery("identify", "bad", "pad "+strings.Repeat(".", 200)).AppendTo(nil)
	out, _ := s.Answer(context.Background(), netip.MustParseAddrPort("192.0.2.1:1"), q)
	var r wiregqp.Response
	if len(out) != 1 || r.Decode(out[0]) != nil {
		t.Fatalf("got %q", out)
	}
	if r.Replies[0].Status != wiregqp.StatusOK || r.Replies[1].Status != wiregqp.StatusUnavailable || r.Replies[2].Status != wiregqp.StatusOK {
		t.Fatalf("statuses %v %v %v, want 10 31 10", r.Replies[0].Status, r.Replies[1].Status, r.Replies[2].Status)
	}
}

// The upstream of an HTTP command is asked at most at its rate, however
// many distinct queries (spoofed ones included) arrive.
func TestHTTPCommandUpstreamRate(t *testing.T) {
	var requests atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"ok": true}`))
	}))
	defer up.Close()
	hc := &HTTPCommand{URL: up.URL, TTL: time.Minute, Rate: 0.001, Burst: 3, Client: up.Client()}
	statuses := map[wiregqp.Status]int{}
	for i := range 20 {
		var resp wiregqp.Response
		r := resp.Add(wiregqp.StatusOK, []byte("status"))
		statuses[hc.Run(context.Background(), [][]byte{[]byte(strconv.Itoa(i))}, r)]++
	}
	if requests.Load() != 3 || statuses[wiregqp.StatusOK] != 3 || statuses[wiregqp.StatusUnavailable] != 17 {
		t.Fatalf("20 distinct queries: %d upstream requests, statuses %v; want 3 requests, 3 answered, 17 unavailable", requests.Load(), statuses)
	}
}

func TestRecordsBounds(t *testing.T) {
	items := make([]string, wiregqp.MaxItems+1)
	for i := range items {
		items[i] = `"p"`
	}
	for name, doc := range map[string]string{
		"too many items": `{"players": [` + strings.Join(items, ",") + `]}`,
		"too many bytes": `{"a": "` + strings.Repeat("x", 70<<10) + `"}`,
		"not an object":  `[1, 2]`,
	} {
		if _, err := Records([]byte(doc)); err == nil {
			t.Fatalf("%s: got nil error, want one", name)
		}
	}
	recs, err := Records([]byte(`{"b": 2, "a": "x\u0001y", "list": [1, {"name": "alice"}, {"id": 3}], "nested": {"k": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(recs)
	want := `[{pair a [x y]} {pair b [2]} {labeled list [1 alice {"id":3}]} {pair nested.k [true]}]`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestCommandRefusesWhatGQPCannotCarry(t *testing.T) {
	p := &QueryProtocol{Client: &Client{Timeout: 100 * time.Millisecond}}
	args := make([]string, wiregqp.MaxArgs+1)
	for _, tc := range []struct {
		name string
		args []string
	}{{"too many arguments", args}, {"control character", []string{"a\x1fb"}}, {"too long", []string{strings.Repeat("x", 2000)}}} {
		_, err := p.Command(context.Background(), "127.0.0.1:9", "echo", tc.args)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.HTTPStatus != http.StatusBadRequest {
			t.Fatalf("%s: got %v, want a 400", tc.name, err)
		}
	}
}
