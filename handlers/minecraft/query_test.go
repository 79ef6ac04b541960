package minecraft

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wiremc "github.com/gamegate/gamegate/wire/minecraft"
)

func TestFlattenChat(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"§6Hello §rworld"`, "Hello world"},
		{`{"text":"A ","extra":[{"text":"§aGreen","bold":true},{"text":" Server"}]}`, "A Green Server"},
		{`[{"text":"a"},"b",{"translate":"c"}]`, "abc"},
		{`{"extra":["x",{"text":"y","extra":[{"text":"z"}]}]}`, "xyz"},
		{`42`, ""},
		{`{"text":`, ""},
		{strings.Repeat(`{"extra":[`, 100) + `"deep"` + strings.Repeat(`]}`, 100), ""},
	} {
		if got := StripFormatting(FlattenChat(json.RawMessage(c.in))); got != c.want {
			t.Errorf("%.40s: got %q, want %q", c.in, got, c.want)
		}
	}
}

// A bare host name is looked up as its _minecraft._tcp SRV record, with
// the resolver the protocol is given (a DNS server on loopback here).
func TestResolveSRV(t *testing.T) {
	dns := testutil.ServeDNS(t, testutil.DNSZone{
		SRV: map[string][]net.SRV{"_minecraft._tcp.mc.example.net.": {{Target: "play.example.net.", Port: 25570}}},
		A:   map[string]netip.Addr{"other.example.net.": netip.MustParseAddr("192.0.2.7")},
	})
	p := &JavaProtocol{Resolver: dns.Resolver()}
	for _, c := range []struct{ in, dial, host, asked string }{
		{"mc.example.net", "play.example.net:25570", "play.example.net", "_minecraft._tcp.mc.example.net."},
		{"other.example.net", "other.example.net:25565", "other.example.net", "_minecraft._tcp.other.example.net."},
		{"mc.example.net:25566", "mc.example.net:25566", "mc.example.net", ""}, // a port: no lookup
		{"192.0.2.1", "192.0.2.1:25565", "192.0.2.1", ""},
	} {
		before := dns.Asked("TypeSRV " + c.asked)
		dial, host, _ := p.resolve(context.Background(), c.in)
		asked := dns.Asked("TypeSRV "+c.asked) - before
		if dial != c.dial || host != c.host || c.asked != "" && asked == 0 {
			t.Errorf("%s: got %s %s (SRV asked %d times), want %s %s (%q asked)", c.in, dial, host, asked, c.dial, c.host, c.asked)
		}
	}
}

// FindsPort takes host names, not IP addresses or host:port.
func TestFindsPort(t *testing.T) {
	for in, want := range map[string]bool{"mc.example.com": true, "localhost": true, "203.0.113.13": false, "999.1.1.1": false, "": false, "a b": false} {
		if got := (*JavaProtocol)(nil).FindsPort(in); got != want {
			t.Errorf("FindsPort(%q): got %v, want %v", in, got, want)
		}
	}
}

// serveOnce accepts connections on loopback and runs handle on each.
func serveOnce(t *testing.T, handle func(c net.Conn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			handle(c)
			c.Close()
		}
	}()
	return l.Addr().String()
}

// A server that only knows the legacy ping closes on the modern
// handshake; the protocol then asks the legacy ping.
func TestLegacyFallback(t *testing.T) {
	addr := serveOnce(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 3)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != 0xFE {
			return // the modern handshake: close
		}
		ans, _ := wiremc.AppendLegacyAnswer(nil, "61", "1.5.2", "§eOld Times", "2", "10")
		_, _ = c.Write(ans)
	})
	for _, legacy := range []bool{true, false} {
		p := &JavaProtocol{Legacy: legacy, Timeout: 2 * time.Second}
		st, err := p.Status(context.Background(), addr)
		if !legacy {
			if query.HTTPStatus(err) != http.StatusBadGateway {
				t.Errorf("without legacy: got %v, want 502", err)
			}
			continue
		}
		if err != nil || st.Name != "Old Times" || st.Version != "1.5.2" || st.NumPlayers != 2 || st.MaxPlayers != 10 || st.Raw["legacy"] != true {
			t.Fatalf("legacy: got %+v, %v", st, err)
		}
		// The raw command answers the legacy answer's fields, as the
		// status's raw data has them, where there is no status JSON.
		raw, err := p.Command(context.Background(), addr, "raw", nil)
		if err != nil {
			t.Fatalf("raw on a legacy-only server: %v", err)
		}
		got, _ := json.Marshal(raw)
		want, _ := json.Marshal(st.Raw)
		if string(got) != string(want) {
			t.Fatalf("raw on a legacy-only server: got %s, want %s", got, want)
		}
	}
}

// A two-line MOTD is named as GameDig names it: every run of white space,
// the line break included, one space, then without § codes (so a code
// between two spaces leaves both); the MOTD as sent stays in raw.
func TestStatusNameAsGamedig(t *testing.T) {
	for in, want := range map[string]string{
		"§aA Server\n§7line two":   "A Server line two",
		"A \n\t  B":                "A B",
		" lead and trail\n":        " lead and trail ",
		"a §l b":                   "a  b",
		"no spaces":                "no spaces",
		"\u00a0non-breaking\u3000": " non-breaking ",
	} {
		if got := statusName(in); got != want {
			t.Errorf("statusName(%q): got %q, want %q", in, got, want)
		}
	}
	st, err := (&JavaProtocol{}).modernStatus("a", []byte(`{"description":{"text":"Line one\nLine two"},"version":{"name":"1.21"},"players":{"online":0,"max":5}}`), 0)
	if err != nil || st.Name != "Line one Line two" {
		t.Fatalf("two-line description: got %+v, %v", st, err)
	}
	if d := st.Raw["description"].(map[string]any)["text"]; d != "Line one\nLine two" {
		t.Fatalf("raw description: got %q, want the line break kept", d)
	}
}

// An answer past the length bound is refused without reading it all.
func TestOversizedFrame(t *testing.T) {
	addr := serveOnce(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = c.Write(wiremc.AppendVarInt(nil, wiremc.MaxFrame+1))
		_, _ = io.Copy(io.Discard, c)
	})
	p := &JavaProtocol{Timeout: 2 * time.Second}
	if _, err := p.Status(context.Background(), addr); query.HTTPStatus(err) != http.StatusBadGateway {
		t.Fatalf("got %v, want 502", err)
	}
}
