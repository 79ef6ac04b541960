package nadeo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wirenadeo "github.com/gamegate/gamegate/wire/nadeo"
)

func protocol(login, password string) *QueryProtocol {
	c := Config{Login: login, Password: password, Attempts: query.Attempts{Retries: -1}}
	p, _ := c.NewProtocol()
	qp := p.(*QueryProtocol)
	qp.Timeout = 2 * time.Second
	return qp
}

func TestStatus(t *testing.T) {
	s := testutil.ExampleNadeo()
	testutil.StartNadeo(t, s)
	st, err := protocol(s.Login, s.Password).Status(context.Background(), s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gâte TM" || st.Map != "A01-Race" || !st.Password || st.NumPlayers != 2 || st.MaxPlayers != 24 ||
		st.Version != "2.11.26" || st.Connect != s.Addr || st.Protocol != "nadeo" {
		t.Errorf("status: got %+v", st)
	}
	if st.Raw["gametype"] != "Time Attack" || st.Raw["mapcount"] != 12 || st.Raw["maxspectators"] != 8 {
		t.Errorf("raw: got %v", st.Raw)
	}
	opts := st.Raw["GetServerOptions"].(map[string]any)
	if _, ok := opts["Password"]; ok || len(opts) != 7 {
		t.Errorf("GetServerOptions: got %v, want it without its two passwords", opts)
	}
	if len(st.Players) != 2 || st.Players[0].Name != "Zoë" || st.Players[1].Name != "Bob" {
		t.Errorf("players: got %+v", st.Players)
	}
}

// A refused login is an error that names neither the login nor the
// password; no login at all is the server's own refusal.
func TestStatusRefused(t *testing.T) {
	s := testutil.ExampleNadeo()
	testutil.StartNadeo(t, s)
	for _, c := range []struct{ login, password string }{{"User", "wrong-secret-0123"}, {"", ""}} {
		_, err := protocol(c.login, c.password).Status(context.Background(), s.Addr)
		var e *query.Error
		if !errors.As(err, &e) || e.Type != query.TypeBadAnswer || !strings.Contains(e.Message, "Permission denied") {
			t.Fatalf("login %q: got %v, want a bad answer with the server's fault", c.login, err)
		}
		text := e.Message + fmt.Sprint(e.Detail)
		if (c.password != "" && strings.Contains(text, c.password)) || strings.Contains(text, s.Password) {
			t.Errorf("the error %q holds a password", text)
		}
	}
}

// serveRaw greets every connection with hello and then writes reply to
// the first call's handle, holding the connection open.
func serveRaw(t *testing.T, hello []byte, reply func(handle uint32) []byte) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		_, _ = c.Write(hello)
		var h [8]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		_, _ = io.CopyN(io.Discard, c, int64(binary.LittleEndian.Uint32(h[:])))
		_, _ = c.Write(reply(binary.LittleEndian.Uint32(h[4:])))
		_, _ = io.Copy(io.Discard, c)
	})
}

// Hostile and broken servers end the query with a clear error, never a
// hang past the attempt or memory sized by their length fields.
func TestStatusBadServers(t *testing.T) {
	hello := wirenadeo.AppendHandshake(nil)
	msg := func(handle uint32, xml string) []byte {
		b, _ := wirenadeo.AppendMessage(nil, handle, []byte(xml))
		return b
	}
	callbacks := func(uint32) []byte {
		var b []byte
		for range 40 {
			b = append(b, msg(3, "<methodCall/>")...)
		}
		return b
	}
	for _, c := range []struct {
		name  string
		hello []byte
		reply func(uint32) []byte
		want  error
	}{
		{"GBXRemote 1", append([]byte{11, 0, 0, 0}, "GBXRemote 1"...), nil, wirenadeo.ErrVersion},
		{"a 2 GiB handshake", []byte{0, 0, 0, 0x80}, nil, nil},
		{"a 2 GiB answer", hello, func(h uint32) []byte { return binary.LittleEndian.AppendUint32([]byte{0, 0, 0, 0x80}, h) }, wirenadeo.ErrSize},
		{"callbacks past max_packets", hello, callbacks, query.ErrTooManyPackets},
		{"not XML-RPC", hello, func(h uint32) []byte { return msg(h, "<html/>") }, wirenadeo.ErrXML},
		{"an array for a struct", hello, func(h uint32) []byte {
			return msg(h, "<methodResponse><params><param><value><array><data/></array></value></param></params></methodResponse>")
		}, ErrShape},
	} {
		t.Run(c.name, func(t *testing.T) {
			reply := c.reply
			if reply == nil {
				reply = func(uint32) []byte { return nil }
			}
			addr := serveRaw(t, c.hello, reply)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := protocol("", "").Status(context.Background(), addr)
			runtime.ReadMemStats(&after)
			var e *query.Error
			if !errors.As(err, &e) || e.Type != query.TypeBadAnswer || (c.want != nil && !errors.Is(e.Detail, c.want)) {
				t.Fatalf("got %v, want a bad answer wrapping %v", err, c.want)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
				t.Errorf("the query allocated %d bytes, want under 1 MiB", grown)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	for name, c := range map[string]Config{
		"password: given without a login": {Password: "x"},
		"login: at most 256 bytes":        {Login: strings.Repeat("a", 257)},
		"password: at most 256 bytes":     {Login: "User", Password: strings.Repeat("s", 257)},
		"max_response_size":               {Budget: query.Budget{MaxResponseSize: 10}},
	} {
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "sss") {
			t.Errorf("%s: got %v", name, err)
		}
	}
	c := Config{Login: "User", Password: "{env.X}"}
	if err := c.Validate(); err != nil {
		t.Errorf("a login: %v", err)
	}
	if p := c.Secrets()["password"]; p == nil || *p != "{env.X}" {
		t.Errorf("Secrets: got %v, want the password", p)
	}
}
