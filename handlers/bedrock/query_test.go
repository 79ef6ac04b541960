package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	wirebe "github.com/gamegate/gamegate/wire/bedrock"
)

const bds = "MCPE;§l§bGate §rRock;686;1.21.2;3;30;1234567890123456789;§eSky Isles;Survival;1;19132;19133;"

func protocol() *QueryProtocol {
	return &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 2 * time.Second}}
}

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		name, ad  string
		want      query.Status
		wantRaw   string
		guid      int64
		wantNoMap bool
		gamePort  string // in connect, when not the query port
	}{
		{name: "dedicated server", ad: bds, guid: -2, gamePort: "19132",
			want:    query.Status{Name: "Gate Rock", Map: "Sky Isles", Version: "1.21.2", NumPlayers: 3, MaxPlayers: 30},
			wantRaw: `{"edition":"MCPE","gamemode":"Survival","gamemode_numeric":1,"max":30,"motd":"§l§bGate §rRock","online":3,"port_v4":19132,"port_v6":19133,"protocol":686,"server_guid":"18446744073709551614","server_id":"1234567890123456789","sub_motd":"§eSky Isles","version":"1.21.2"}`},
		{name: "six fields", ad: "MCEE;Class;465;1.17.30;0;8", guid: 9,
			want:    query.Status{Name: "Class", Version: "1.17.30", MaxPlayers: 8},
			wantRaw: `{"edition":"MCEE","max":8,"motd":"Class","online":0,"protocol":465,"server_guid":"9","version":"1.17.30"}`},
		{name: "extra fields and escapes", ad: `MCPE;Semi\;colon;589;1.20.0;1;20;6;world;Creative;1;;;0;x;`, guid: 6,
			want:    query.Status{Name: "Semi;colon", Map: "world", Version: "1.20.0", NumPlayers: 1, MaxPlayers: 20},
			wantRaw: `{"edition":"MCPE","extra":["0","x"],"gamemode":"Creative","gamemode_numeric":1,"max":20,"motd":"Semi;colon","online":1,"port_v4":"","port_v6":"","protocol":589,"server_guid":"6","server_id":"6","sub_motd":"world","version":"1.20.0"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, pings := testutil.ServeBedrock(t, c.guid, c.ad)
			st, err := protocol().Status(context.Background(), addr.String())
			if err != nil {
				t.Fatal(err)
			}
			if st.Name != c.want.Name || st.Map != c.want.Map || st.Version != c.want.Version ||
				st.NumPlayers != c.want.NumPlayers || st.MaxPlayers != c.want.MaxPlayers ||
				st.Protocol != "bedrock" || st.Address != addr.String() || st.Players == nil || len(st.Players) != 0 {
				t.Errorf("got %+v, want %+v", st, c.want)
			}
			// connect is the advertised IPv4 port, when there is one.
			wantConnect := addr.String()
			if c.gamePort != "" {
				wantConnect = "127.0.0.1:" + c.gamePort
			}
			if st.Connect != wantConnect || st.QueryPort != int(addr.Port()) || st.Bots == nil {
				t.Errorf("connect %q, queryPort %d, bots %v; want %q, %d, []", st.Connect, st.QueryPort, st.Bots, wantConnect, addr.Port())
			}
			raw, _ := json.Marshal(st.Raw)
			if string(raw) != c.wantRaw {
				t.Errorf("raw: got %s, want %s", raw, c.wantRaw)
			}
			if n := pings.Load(); n != 1 {
				t.Errorf("%d pings, want 1", n)
			}
		})
	}
}

// Pongs that do not echo the ping's time (a stale answer, a forged one),
// or that lack the magic, are dropped and waiting goes on.
func TestStatusWantsItsTime(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		var ping wirebe.Ping
		if ping.Decode(req) != nil {
			return nil
		}
		noMagic := testutil.BedrockPong(t, ping.Time, 1, "MCPE;Forged;1;v;0;1;")
		copy(noMagic[17:], make([]byte, 16))
		return [][]byte{
			testutil.BedrockPong(t, ping.Time+1, 1, "MCPE;Stale;1;v;0;1;"),
			noMagic,
			testutil.BedrockPong(t, ping.Time, 1, bds),
		}
	})
	st, err := protocol().Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gate Rock" {
		t.Errorf("name: got %q, want Gate Rock", st.Name)
	}
}

// A pong to the ping that cannot be decoded is the server's answer, and
// unusable: 502, saying why.
func TestStatusUnusablePong(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		var ping wirebe.Ping
		if ping.Decode(req) != nil {
			return nil
		}
		return [][]byte{testutil.BedrockPong(t, ping.Time, 1, "MCPE;Broken;1;v;many;10;")}
	})
	_, err := protocol().Status(context.Background(), addr.String())
	var qe *query.Error
	if !errors.As(err, &qe) || qe.HTTPStatus != http.StatusBadGateway {
		t.Fatalf("got %v, want a 502 *query.Error", err)
	}
}

func TestStatusTimeout(t *testing.T) {
	var got atomic.Int64
	addr := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { got.Add(1); return nil })
	p := &QueryProtocol{UDPExchange: query.UDPExchange{Timeout: 50 * time.Millisecond, Retries: 2}}
	_, err := p.Status(context.Background(), addr.String())
	if query.HTTPStatus(err) != http.StatusGatewayTimeout {
		t.Fatalf("got %v, want a 504", err)
	}
	// The responder counts the last ping on its own goroutine, which may
	// run after Status has given up on it.
	testutil.WaitFor(t, "3 pings (one and two retries)", func() bool { return got.Load() == 3 })
}

func TestAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1:19132", "127.0.0.1:1234": "127.0.0.1:1234", "play.example.net": "play.example.net:19132",
		"::1": "[::1]:19132", "[::1]:5": "[::1]:5", "[::1]": "[::1]:19132",
	} {
		if got := Address(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// FindsPort takes IP addresses and host names, which Address completes.
func TestFindsPort(t *testing.T) {
	for in, want := range map[string]bool{
		"203.0.113.31": true, "::1": true, "[::1]": true, "play.example.net": true,
		"999.1.1.1": false, "": false, "a b": false, "127.0.0.1:19132": false,
	} {
		if got := (*QueryProtocol)(nil).FindsPort(in); got != want {
			t.Errorf("FindsPort(%q): got %v, want %v", in, got, want)
		}
	}
}

func TestCommands(t *testing.T) {
	addr, _ := testutil.ServeBedrock(t, 77, bds)
	p := protocol()
	if got := p.ReadOnlyCommands(); len(got) != 1 || got[0] != "raw" {
		t.Errorf("ReadOnlyCommands: got %v", got)
	}
	out, err := p.Command(context.Background(), addr.String(), "raw", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	if want := `{"advertisement":"` + bds + `","server_guid":"77"}`; string(b) != want {
		t.Errorf("raw: got %s, want %s", b, want)
	}
	if _, err := p.Command(context.Background(), addr.String(), "players", nil); query.HTTPStatus(err) != http.StatusNotFound {
		t.Errorf("players: got %v, want 404", err)
	}
	if _, err := p.Command(context.Background(), addr.String(), "raw", []string{"x"}); query.HTTPStatus(err) != http.StatusBadRequest {
		t.Errorf("raw x: got %v, want 400", err)
	}
}

// A burst of forged pongs (the wrong time) ahead of the real one costs the
// client a header check each and changes nothing: the answer is the real
// pong's. (50 of them: a loopback socket's default buffer holds that many
// with room for the real one.)
func TestStatusForgedBurst(t *testing.T) {
	addr := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		var ping wirebe.Ping
		if ping.Decode(req) != nil {
			return nil
		}
		var out [][]byte
		for i := range 50 {
			out = append(out, testutil.BedrockPong(t, ping.Time^int64(i+1), 1, "MCPE;Forged;1;v;0;1;"))
		}
		return append(out, testutil.BedrockPong(t, ping.Time, 1, bds))
	})
	st, err := protocol().Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "Gate Rock" {
		t.Errorf("name: got %q, want Gate Rock", st.Name)
	}
}

// The largest pong a UDP datagram holds (its length prefix could announce
// a little more) is read whole, and bytes that are not UTF-8 are replaced.
func TestStatusLargestPong(t *testing.T) {
	tail := ";1;v;0;1;"
	motd := "\xffBig " + strings.Repeat("x", query.MaxDatagram-wirebe.PongHeaderLen-len("MCPE;")-len("\xffBig ")-len(tail))
	addr, _ := testutil.ServeBedrock(t, 1, "MCPE;"+motd+tail)
	st, err := protocol().Status(context.Background(), addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if want := "\uFFFD" + motd[1:]; st.Name != want {
		t.Errorf("name: got %d bytes starting %q, want %d bytes", len(st.Name), st.Name[:min(20, len(st.Name))], len(want))
	}
}
