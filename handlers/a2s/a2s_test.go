package a2s

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

func cannedInfo() wirea2s.Info {
	return wirea2s.Info{Protocol: 17, Name: []byte("Canned Server"), Map: []byte("de_dust2"), Folder: []byte("csgo"),
		Game: []byte("Counter-Strike 2"), AppID: 730, Players: 2, MaxPlayers: 24, Bots: 1, ServerType: 'd',
		Environment: 'l', Visibility: 1, VAC: 1, Version: []byte("1.40.1.2"),
		EDF: wirea2s.EDFPort | wirea2s.EDFKeywords | wirea2s.EDFSteamID, Port: 27015, Keywords: []byte("secure"), SteamID: 90000000000000001}
}

func cannedPlayers() wirea2s.Players {
	return wirea2s.Players{Players: []wirea2s.Player{
		{Index: 0, Name: []byte("alice"), Score: 12, Duration: 61.5},
		{Index: 1, Name: []byte("bob"), Score: -1, Duration: 3},
	}}
}

func startCanned(t *testing.T, compressed bool, layout wirea2s.Layout) (*a2sserver.Server, []byte) {
	msg, bz := a2sserver.BigRules(t)
	cfg := a2sserver.Config{Info: cannedInfo(), Players: cannedPlayers(), RulesMessage: msg,
		InfoChallenge: true, Layout: layout}
	if compressed {
		cfg.RulesCompressed = bz
	}
	return a2sserver.Start(t, cfg), msg
}

func TestClientAgainstCannedServer(t *testing.T) {
	for _, c := range []struct {
		name       string
		compressed bool
		layout     wirea2s.Layout
	}{
		{"source", false, wirea2s.LayoutSource},
		{"source-no-size", false, wirea2s.LayoutSourceNoSize},
		{"goldsrc", false, wirea2s.LayoutGoldSrc},
		{"source-bzip2", true, wirea2s.LayoutSource},
		{"source-no-size-bzip2", true, wirea2s.LayoutSourceNoSize},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, rules := startCanned(t, c.compressed, c.layout)
			cl := &Client{Timeout: 2 * time.Second}
			a, err := cl.Query(context.Background(), srv.Addr, wirea2s.TypeRulesRequest)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Message, rules) || a.Layout != c.layout || (a.Compressed != nil) != c.compressed {
				t.Fatalf("got %d bytes in layout %v (compressed %v), want the %d-byte rules in %v (compressed %v)",
					len(a.Message), a.Layout, a.Compressed != nil, len(rules), c.layout, c.compressed)
			}
			// Two requests: the first drew the challenge.
			if got := srv.ReceivedOf(wirea2s.TypeRulesRequest); got != 2 {
				t.Fatalf("server saw %d rules requests, want 2 (challenge flow)", got)
			}
		})
	}
}

func TestQueryProtocol(t *testing.T) {
	srv, _ := startCanned(t, true, wirea2s.LayoutSource)
	p := &QueryProtocol{Client: &Client{Timeout: 2 * time.Second}}
	st, err := p.Status(context.Background(), srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	// One bot, by A2S_INFO: alice, on the server longest (GameDig's rule).
	if st.Name != "Canned Server" || st.Map != "de_dust2" || st.Version != "1.40.1.2" || st.NumPlayers != 2 ||
		st.MaxPlayers != 24 || !st.Password || len(st.Players) != 1 || st.Players[0].Name != "bob" ||
		len(st.Bots) != 1 || st.Bots[0].Name != "alice" ||
		st.Bots[0].Raw["score"] != int32(12) || st.Bots[0].Raw["time"] != 61.5 || st.Raw["bots"] != 1 {
		t.Fatalf("status: %+v", st)
	}
	// The game port of the extra data is where clients join.
	if _, port, _ := net.SplitHostPort(srv.Addr); st.Connect != "127.0.0.1:27015" || strconv.Itoa(st.QueryPort) != port {
		t.Fatalf("connect %q, queryPort %d; want the game port 27015 and the query port %s", st.Connect, st.QueryPort, port)
	}
	info := st.Raw["info"].(*InfoJSON)
	if info.AppID != 730 || *info.Port != 27015 || info.Keywords != "secure" || info.SteamID != "90000000000000001" {
		t.Fatalf("raw info: %+v", info)
	}
	rules, err := p.Command(context.Background(), srv.Addr, "rules", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rl := rules.([]RuleJSON); len(rl) != 90 || rl[0].Name != "sv_rule_000" {
		t.Fatalf("rules: %d, first %+v", len(rl), rl[0])
	}
	if _, err := p.Command(context.Background(), srv.Addr, "nope", nil); query.HTTPStatus(err) != http.StatusNotFound {
		t.Fatalf("unknown command: got %v", err)
	}
	if _, err := p.Command(context.Background(), srv.Addr, "info", []string{"x"}); query.HTTPStatus(err) != http.StatusBadRequest {
		t.Fatalf("arguments: got %v", err)
	}
	// Nobody listening: refused (the ICMP port unreachable), 502.
	dead := testutil.FreeUDPAddr(t)
	p.Client.Timeout, p.Client.Retries = 100*time.Millisecond, -1
	var qe *query.Error
	if _, err := p.Status(context.Background(), dead); !errors.As(err, &qe) || qe.HTTPStatus != http.StatusBadGateway || qe.Kind() != query.TypeRefused {
		t.Fatalf("dead server: got %v, want a 502 of type refused", err)
	}
}

// TestQueryProtocolBadAnswer: a server answering garbage is a 502.
// The bots are A2S_INFO's count of players with the longest times, a time
// of -1 counting as longest and ties going to the later-listed, as GameDig
// picks them.
func TestBotIndexes(t *testing.T) {
	pl := func(d ...float64) []PlayerJSON {
		out := make([]PlayerJSON, len(d))
		for i := range d {
			out[i].Duration = d[i]
		}
		return out
	}
	for _, c := range []struct {
		name    string
		players []PlayerJSON
		bots    int
		want    string
	}{
		{"none", pl(5, 10), 0, "[false false]"},
		{"longest", pl(5, 10, 7), 1, "[false true false]"},
		{"minus one is longest", pl(5, -1, 700), 1, "[false true false]"},
		{"ties to the later-listed", pl(9, 9, 9), 2, "[false true true]"},
		{"more bots than players", pl(1), 3, "[true]"},
		{"negative count", pl(1), -1, "[false]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fmt.Sprint(botIndexes(c.players, c.bots)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestQueryProtocolBadAnswer(t *testing.T) {
	addr := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte {
		return [][]byte{{0xFF, 0xFF, 0xFF, 0xFF, 'I', 17, 'x'}} // truncated info
	})
	p := &QueryProtocol{Client: &Client{Timeout: time.Second}}
	if _, err := p.Command(context.Background(), addr.String(), "info", nil); query.HTTPStatus(err) != http.StatusBadGateway {
		t.Fatalf("got %v, want a 502", err)
	}
}

func newShield(t *testing.T, upstream string, clock func() time.Time, decompress bool) *Shield {
	s, err := NewShield(ShieldConfig{Upstream: upstream, Client: &Client{Timeout: 2 * time.Second},
		Cache: cache.Policy{TTL: time.Hour, LoadTimeout: 5 * time.Second}, Now: clock, Decompress: decompress})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestShieldChallenges(t *testing.T) {
	srv, _ := startCanned(t, false, wirea2s.LayoutSource)
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	s := newShield(t, srv.Addr, clock.Now, false)
	src := netip.MustParseAddrPort("127.0.0.9:40000")
	req, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)
	reply, _, serve, v := s.Classify(src, req, nil)
	if serve || v != Challenged || len(reply) != wirea2s.ChallengeLen || len(reply) > len(req) {
		t.Fatalf("no challenge: got %x serve %v verdict %v", reply, serve, v)
	}
	c, _ := wirea2s.DecodeChallenge(reply)
	withC, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest, Challenge: c, HasChallenge: true}).AppendTo(nil)
	if _, typ, serve, _ := s.Classify(src, withC, nil); !serve || typ != wirea2s.TypeInfoRequest {
		t.Fatal("the challenge given was refused")
	}
	// Another source, or the same address on another port, gets its own.
	if _, _, serve, _ := s.Classify(netip.MustParseAddrPort("127.0.0.9:40001"), withC, nil); serve {
		t.Fatal("a challenge was accepted from another port")
	}
	// Valid for the next window, not the one after.
	clock.Advance(30 * time.Second)
	if _, _, serve, _ := s.Classify(src, withC, nil); !serve {
		t.Fatal("a challenge expired after one window")
	}
	clock.Advance(31 * time.Second)
	if _, _, serve, _ := s.Classify(src, withC, nil); serve {
		t.Fatal("a challenge outlived two windows")
	}
	if srv.Received() != 0 {
		t.Fatalf("challenges reached the upstream: %d datagrams", srv.Received())
	}
}

// The legacy challenge request (0x57) gets S2C_CHALLENGE, as from a game
// server, and the challenge is good for the requests that follow; the
// answer is never longer than the request, so the bare 5-byte form, whose
// answer would be, gets nothing. Nothing reaches the upstream.
func TestShieldLegacyChallengeRequest(t *testing.T) {
	srv, _ := startCanned(t, false, wirea2s.LayoutSource)
	s := newShield(t, srv.Addr, nil, false)
	src := netip.MustParseAddrPort("127.0.0.9:40000")

	bare, _ := (&wirea2s.Request{Type: wirea2s.TypeChallengeRequest}).AppendTo(nil)
	if reply, _, serve, v := s.Classify(src, bare, nil); serve || v != DroppedTooShort || len(reply) != 0 {
		t.Fatalf("the bare request (%d bytes): got %x serve %v verdict %v; want nothing, %v", len(bare), reply, serve, v, DroppedTooShort)
	}
	padded, _ := (&wirea2s.Request{Type: wirea2s.TypeChallengeRequest, Challenge: wirea2s.NoChallenge, HasChallenge: true}).AppendTo(nil)
	reply, _, serve, v := s.Classify(src, padded, nil)
	if serve || v != Challenged || len(reply) != wirea2s.ChallengeLen || len(reply) > len(padded) {
		t.Fatalf("the padded request (%d bytes): got %x serve %v verdict %v", len(padded), reply, serve, v)
	}
	c, err := wirea2s.DecodeChallenge(reply)
	if err != nil || !s.Valid(src, c) {
		t.Fatalf("the answer %x is not a valid S2C_CHALLENGE for the source (%v)", reply, err)
	}
	// Whatever challenge it carries, the legacy request is answered, never
	// served from the cache.
	withC, _ := (&wirea2s.Request{Type: wirea2s.TypeChallengeRequest, Challenge: c, HasChallenge: true}).AppendTo(nil)
	if reply, _, serve, v := s.Classify(src, withC, nil); serve || v != Challenged || len(reply) != wirea2s.ChallengeLen {
		t.Fatalf("with a valid challenge: got %x serve %v verdict %v", reply, serve, v)
	}
	players, _ := (&wirea2s.Request{Type: wirea2s.TypePlayerRequest, Challenge: c, HasChallenge: true}).AppendTo(nil)
	if _, typ, serve, _ := s.Classify(src, players, nil); !serve || typ != wirea2s.TypePlayerRequest {
		t.Fatal("A2S_PLAYER with the challenge of the legacy request was refused")
	}
	if srv.Received() != 0 {
		t.Fatalf("challenge requests reached the upstream: %d datagrams", srv.Received())
	}
}

func TestShieldServesSplitAndCompressed(t *testing.T) {
	for _, c := range []struct {
		name                   string
		compressed, decompress bool
		layout                 wirea2s.Layout
	}{
		{"split", false, false, wirea2s.LayoutSource},
		{"split-no-size", false, false, wirea2s.LayoutSourceNoSize},
		{"compressed", true, false, wirea2s.LayoutSource},
		{"compressed-served-plain", true, true, wirea2s.LayoutSource},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, rules := startCanned(t, c.compressed, c.layout)
			s := newShield(t, srv.Addr, nil, c.decompress)
			for round := 0; round < 3; round++ {
				ds := s.Serve(context.Background(), wirea2s.TypeRulesRequest)
				var r wirea2s.Reassembler
				var complete bool
				for _, d := range ds {
					if len(d) > MaxSingle {
						t.Fatalf("a datagram of %d bytes", len(d))
					}
					var err error
					if complete, err = r.Add(d); err != nil {
						t.Fatal(err)
					}
				}
				_, _, _, wasCompressed := r.Compressed()
				if !complete || !bytes.Equal(r.Message(), rules) || r.SplitLayout() != c.layout || wasCompressed != (c.compressed && !c.decompress) {
					t.Fatalf("served %d datagrams: complete %v, layout %v, compressed %v", len(ds), complete, r.SplitLayout(), wasCompressed)
				}
			}
			// One upstream query (two datagrams: challenge and request).
			if got := srv.ReceivedOf(wirea2s.TypeRulesRequest); got != 2 {
				t.Fatalf("upstream saw %d rules requests, want 2", got)
			}
		})
	}
}

func TestShieldClassifyAllocs(t *testing.T) {
	s := newShield(t, "127.0.0.1:1", nil, false)
	src := netip.MustParseAddrPort("127.0.0.9:40000")
	req, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)
	out := make([]byte, 0, 64)
	if a := testing.AllocsPerRun(200, func() { s.Classify(src, req, out[:0]) }); a != 0 {
		t.Fatalf("Classify allocates %v times per challenge", a)
	}
}
