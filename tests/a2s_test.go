package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// a2sEnv is a real Caddy with two A2S shields in front of two canned game
// servers (one splits its rules, the other compresses them) and a
// game_query gateway that can ask the shields and the game servers. The
// shields run as layer4 handlers on caddy-l4, or as protocols of the
// gamegate app (inApp).
type a2sEnv struct {
	base              string
	plain, compressed *a2sserver.Server // the game servers
	shield, shieldBZ2 string            // their shields
	rules             []byte
	caddy             *testcaddy.Caddy
}

func a2sInfo(name string) wirea2s.Info {
	return wirea2s.Info{Protocol: 17, Name: []byte(name), Map: []byte("de_inferno"), Folder: []byte("csgo"),
		Game: []byte("Counter-Strike 2"), AppID: 730, Players: 3, MaxPlayers: 20, Bots: 1, ServerType: 'd',
		Environment: 'l', Visibility: 0, VAC: 1, Version: []byte("1.40.2.3"),
		EDF: wirea2s.EDFPort | wirea2s.EDFKeywords, Port: 27015, Keywords: []byte("gamegate,test")}
}

var a2sPlayers = wirea2s.Players{Players: []wirea2s.Player{
	{Index: 0, Name: []byte("alice"), Score: 21, Duration: 600.5},
	{Index: 1, Name: []byte("bob"), Score: 7, Duration: 120},
	{Index: 2, Name: []byte("carol"), Score: 0, Duration: 3.25},
}}

// a2sHosts are the two ways a shield is served, for tests that run on both.
var a2sHosts = []struct {
	name  string
	inApp bool
}{{"layer4", false}, {"app", true}}

// startA2S starts the game servers and Caddy; the shields' options are
// shieldOptions, or a ttl of 1h if none are given.
func startA2S(t *testing.T, shieldOptions string, inApp ...bool) *a2sEnv {
	t.Helper()
	if shieldOptions == "" {
		shieldOptions = "ttl 1h"
	}
	msg, bz := a2sserver.BigRules(t)
	env := &a2sEnv{rules: msg}
	env.plain = a2sserver.Start(t, a2sserver.Config{Info: a2sInfo("Plain Server"), Players: a2sPlayers,
		RulesMessage: msg, InfoChallenge: true})
	env.compressed = a2sserver.Start(t, a2sserver.Config{Info: a2sInfo("Compressed Server"), Players: a2sPlayers,
		RulesMessage: msg, RulesCompressed: bz, InfoChallenge: true})
	env.shield, env.shieldBZ2 = testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	httpAddr := testutil.FreeTCPAddr(t)
	env.base = "http://" + httpAddr
	shields := fmt.Sprintf(`layer4 {
		udp/%s {
			@a2s a2s
			route @a2s {
				a2s_shield %s {
					%s
				}
			}
		}
		udp/%s {
			route {
				a2s_shield %s {
					%s
				}
			}
		}
	}`, env.shield, env.plain.Addr, shieldOptions, env.shieldBZ2, env.compressed.Addr, shieldOptions)
	if len(inApp) > 0 && inApp[0] {
		shields = fmt.Sprintf(`gamegate {
		udp %s {
			a2s_shield %s {
				%s
			}
		}
		udp %s {
			a2s_shield %s {
				%s
			}
		}
	}`, env.shield, env.plain.Addr, shieldOptions, env.shieldBZ2, env.compressed.Addr, shieldOptions)
	}
	env.caddy = testcaddy.Start(t, fmt.Sprintf(`{
	admin off
	%s
}
http://%s {
	handle_path /query/* {
		game_query {
			server direct %s a2s
			server shielded %s a2s
			server shielded-bz2 %s a2s
			ttl status 1h
			default_ttl 1h
			query_timeout 5s
		}
	}
}
`, shields, httpAddr, env.plain.Addr, env.shield, env.shieldBZ2))
	return env
}

// The gateway asks the shields over A2S and gets what the game servers
// behind them hold: status, players, and the rules answer split and
// compressed.
func TestA2SShieldThroughGateway(t *testing.T) {
	for _, h := range a2sHosts {
		t.Run(h.name, func(t *testing.T) { testA2SShieldThroughGateway(t, h.inApp) })
	}
}

func testA2SShieldThroughGateway(t *testing.T, inApp bool) {
	env := startA2S(t, "", inApp)
	for _, server := range []string{"direct", "shielded", "shielded-bz2"} {
		var st query.Status
		r := getJSON(t, env.base+"/query/"+server, &st)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", server, r.status, r.body)
		}
		want := "Plain Server"
		if server == "shielded-bz2" {
			want = "Compressed Server"
		}
		// A2S_INFO counts one bot; as GameDig does, it is taken to be the
		// player on the server longest: alice.
		if st.Name != want || st.Map != "de_inferno" || st.Version != "1.40.2.3" || st.NumPlayers != 3 ||
			st.MaxPlayers != 20 || st.Password || len(st.Players) != 2 || st.Players[1].Name != "carol" ||
			len(st.Bots) != 1 || st.Bots[0].Name != "alice" || st.Bots[0].Raw["score"] != float64(21) ||
			st.Bots[0].Raw["time"] != 600.5 || st.Raw["bots"] != float64(1) {
			t.Fatalf("%s: status %s", server, r.body)
		}
		var rules []a2s.RuleJSON
		if r := getJSON(t, env.base+"/query/"+server+"/rules", &rules); r.status != 200 || len(rules) != 90 ||
			rules[89].Name != "sv_rule_089" || rules[89].Value != "value number 89 xxxx" {
			t.Fatalf("%s: rules %d %.200s", server, r.status, r.body)
		}
	}
	// A command the protocol does not declare read-only is not forwarded
	// unless the server's allow-list names it.
	if r := getJSON(t, env.base+"/query/shielded/frags", nil); r.status != 403 {
		t.Fatalf("unknown command: %d %s, want 403", r.status, r.body)
	}
}

// An A2S server with a bot, asked through the gateway and by GameDig:
// gamegate's status has GameDig's shape, field by field. A2S_PLAYER does
// not say who is a bot; both take A2S_INFO's bot count of players with the
// longest time. The server's game port (extra data) is not its query port:
// connect names the game port.
func TestA2SGamedigShapeWithBot(t *testing.T) {
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	info := a2sInfo("Bot Server")
	info.Players, info.Bots, info.Visibility = 4, 1, 1
	players := wirea2s.Players{Players: append(slices.Clone(a2sPlayers.Players),
		wirea2s.Player{Index: 3, Name: []byte("BOT Gate"), Score: 3, Duration: 5400})}
	server := a2sserver.Start(t, a2sserver.Config{Info: info, Players: players, InfoChallenge: true})
	gate := startQueryGate(t, fmt.Sprintf(`
			server cs2 %s a2s`, server.Addr))

	var st query.Status
	r := getJSON(t, gate+"/query/cs2", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/cs2: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	var gd map[string]any
	gdOut := testutil.Gamedig(t, "counterstrike2", server.Addr, &gd)
	t.Logf("gamedig: %s", gdOut)
	compareGamedig(t, "A2S with 1 bot of 4 players, game port 27015: gamegate a2s against gamedig "+gamedigVersion+" --type counterstrike2",
		[]byte(r.body), gdOut, nil)
	if st.NumPlayers != 4 || len(st.Players) != 3 || len(st.Bots) != 1 || st.Bots[0].Name != "BOT Gate" || !st.Password ||
		st.Connect != "127.0.0.1:27015" || st.QueryPort == 27015 {
		t.Errorf("gamegate's status: got %s", r.body)
	}
}

// The legacy challenge request (FF FF FF FF 57) is answered by the shield
// as by the game server behind it: S2C_CHALLENGE, whose challenge then
// opens A2S_PLAYER. Only in a request at least as long as the answer (the
// 5-byte form padded with int32 -1): the bare form, whose answer would be
// longer than it, is dropped and counted, and reaches no game server.
func TestA2SShieldLegacyChallengeRequest(t *testing.T) {
	for _, h := range a2sHosts {
		t.Run(h.name, func(t *testing.T) {
			env := startA2S(t, "", h.inApp)
			padded, _ := (&wirea2s.Request{Type: wirea2s.TypeChallengeRequest, Challenge: wirea2s.NoChallenge, HasChallenge: true}).AppendTo(nil)
			bare, _ := (&wirea2s.Request{Type: wirea2s.TypeChallengeRequest}).AppendTo(nil)
			ask := func(c *testutil.UDPClient, req []byte) []byte {
				t.Helper()
				for range 5 {
					c.Send(req)
					if b, ok := c.Recv(2 * time.Second); ok {
						return b
					}
				}
				t.Fatalf("no answer to %x", req)
				return nil
			}
			// The game server's own answer, for comparison.
			game := ask(testutil.DialUDP(t, "127.0.0.1:0", env.plain.Addr), padded)
			client := testutil.DialUDP(t, "127.0.0.1:0", env.shield)
			got := ask(client, padded)
			t.Logf("to %x: game server %x, shield %x", padded, game, got)
			if _, typ, err := wirea2s.Peek(game); err != nil || typ != wirea2s.TypeChallenge || len(game) != wirea2s.ChallengeLen {
				t.Fatalf("the game server answered %x, want S2C_CHALLENGE (the test's premise)", game)
			}
			c, err := wirea2s.DecodeChallenge(got)
			if err != nil || len(got) != len(game) || len(got) > len(padded) {
				t.Fatalf("the shield answered %x, want S2C_CHALLENGE of %d bytes like the game server's (%v)", got, len(game), err)
			}
			before := env.plain.Received()
			players, _ := (&wirea2s.Request{Type: wirea2s.TypePlayerRequest, Challenge: c, HasChallenge: true}).AppendTo(nil)
			var m wirea2s.Players
			if err := m.Decode(ask(client, players)); err != nil || len(m.Players) != 3 {
				t.Fatalf("A2S_PLAYER with the challenge: %+v (%v)", m, err)
			}

			dropped := env.caddy.MustMetric(t, `gamegate_a2s_shield_requests_total{outcome="dropped_too_short"}`)
			client.Send(bare)
			testutil.WaitFor(t, "the bare request counted as dropped_too_short", func() bool {
				v, _ := env.caddy.Metric(t, `gamegate_a2s_shield_requests_total{outcome="dropped_too_short"}`)
				return v == dropped+1
			})
			if b, ok := client.Recv(100 * time.Millisecond); ok {
				t.Fatalf("the bare %d-byte request got %x", len(bare), b)
			}
			// The game server saw one A2S_PLAYER (and its challenge
			// request) for the shield's cache, nothing of the rest.
			if n := env.plain.Received() - before; n > 2 {
				t.Fatalf("the game server received %d datagrams after the challenge, want at most the 2 of one A2S_PLAYER", n)
			}
		})
	}
}

// gamedigValve is the part of GameDig's answer for a valve-protocol game
// that the test compares.
type gamedigValve struct {
	Name       string `json:"name"`
	Map        string `json:"map"`
	MaxPlayers int    `json:"maxplayers"`
	NumPlayers int    `json:"numplayers"`
	Raw        struct {
		AppID int `json:"appId"`
		// Every player as the server listed them (GameDig's own players
		// and bots lists guess which are bots from the connection times).
		Players []struct {
			Name  string  `json:"name"`
			Score int     `json:"score"`
			Time  float64 `json:"time"`
		} `json:"players"`
		Rules map[string]string `json:"rules"`
	} `json:"raw"`
}

// quakestatA2S is the part of quakestat's JSON answer the test compares.
type quakestatA2S struct {
	Status     string `json:"status"`
	Name       string `json:"name"`
	Map        string `json:"map"`
	NumPlayers int    `json:"numplayers"`
	MaxPlayers int    `json:"maxplayers"`
	Rules      map[string]string
	Players    []struct {
		Name  string `json:"name"`
		Score int    `json:"score"`
		Time  string `json:"time"`
	} `json:"players"`
}

// GameDig and qstat, independent A2S clients, query the shields (layer4
// handlers and gamegate app protocols) and read the game servers' name,
// map, players, and the 90 rules: split over three datagrams from one
// shield, bzip2-compressed from the other.
func TestA2SShieldIndependentClients(t *testing.T) {
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	t.Logf("independent clients: quakestat %s, gamedig %s", testutil.QuakestatVersion(t), gamedigVersion)
	for _, h := range a2sHosts {
		t.Run(h.name, func(t *testing.T) { testA2SShieldIndependentClients(t, gamedigVersion, h.inApp) })
	}
}

func testA2SShieldIndependentClients(t *testing.T, gamedigVersion string, inApp bool) {
	env := startA2S(t, "", inApp)
	for _, c := range []struct{ name, addr, server string }{
		{"split", env.shield, "Plain Server"},
		{"bzip2", env.shieldBZ2, "Compressed Server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := testutil.RunNode(t, 30*time.Second, "node_modules/gamedig/bin/gamedig.js",
				"--type", "counterstrike2", "--requestRules", "--requestRulesRequired", "--requestPlayersRequired", c.addr)
			var gd gamedigValve
			if err := json.Unmarshal(out, &gd); err != nil {
				t.Fatalf("gamedig printed %.500s: %v", out, err)
			}
			t.Logf("gamedig %s: name %q map %q players %d/%d rules %d", gamedigVersion, gd.Name, gd.Map, gd.NumPlayers, gd.MaxPlayers, len(gd.Raw.Rules))
			if gd.Name != c.server || gd.Map != "de_inferno" || gd.MaxPlayers != 20 || gd.NumPlayers != 3 ||
				len(gd.Raw.Players) != 3 || gd.Raw.Players[1].Name != "bob" || gd.Raw.Players[1].Score != 7 || gd.Raw.Players[1].Time != 120 ||
				gd.Raw.AppID != 730 || len(gd.Raw.Rules) != 90 || gd.Raw.Rules["sv_rule_000"] != "value number 0 " ||
				gd.Raw.Rules["sv_rule_050"] != "value number 50 xxxxxxxxxxxxxxxx" {
				rules := gd.Raw.Rules
				gd.Raw.Rules = nil
				t.Fatalf("gamedig read %+v and %d rules (sv_rule_050 = %q)", gd, len(rules), rules["sv_rule_050"])
			}

			qs, err := exec.Command("quakestat", "-json", "-R", "-P", "-a2s", c.addr).Output()
			if err != nil {
				t.Fatalf("quakestat: %v: %s", err, qs)
			}
			t.Logf("quakestat: %.300s", qs)
			var qsv []quakestatA2S
			// qstat 2.17 leaves a comma after the last rule: not JSON.
			fixed := regexp.MustCompile(`,(\s*})`).ReplaceAll(qs, []byte("$1"))
			if err := json.Unmarshal(fixed, &qsv); err != nil || len(qsv) != 1 {
				t.Fatalf("quakestat printed %s (%v)", qs, err)
			}
			q := qsv[0]
			if q.Name != c.server || q.Map != "de_inferno" || q.MaxPlayers != 20 || q.NumPlayers != 3 {
				t.Fatalf("quakestat read %s", qs)
			}
			if c.name == "bzip2" {
				// qstat 2.17 has no bzip2 decoder (its binary links no
				// libbz2 and names no bzip2 routine): it cannot read a
				// compressed answer from any server, and gives up the rules
				// and the players after it. GameDig above read them.
				if q.Rules["sv_rule_089"] != "" {
					t.Fatalf("quakestat read compressed rules; the test's premise is out of date: %s", qs)
				}
				t.Logf("quakestat %s: info read (name, map, counts); compressed rules not readable by qstat, as expected", c.name)
				return
			}
			if len(q.Players) != 3 || q.Rules["sv_rule_089"] != gd.Raw.Rules["sv_rule_089"] || q.Rules["sv_rule_000"] != "value number 0 " {
				t.Fatalf("quakestat read %d players and %d rules: %s", len(q.Players), len(q.Rules), qs)
			}
			t.Logf("quakestat %s: %d players, %d rule entries (info fields included)", c.name, len(q.Players), len(q.Rules))
		})
	}
}

// A flood of A2S_INFO requests from 2000 spoofed sources (every address
// its own, all of it loopback), without a challenge or with a wrong one,
// while one real client keeps asking: every spoofed source gets only the
// 9-byte challenge, never more than it sent, and the game server sees the
// real client's one refresh and nothing of the flood.
func TestA2SShieldSpoofedFlood(t *testing.T) {
	env := startA2S(t, "")
	real := &a2s.Client{Timeout: 2 * time.Second}
	if _, err := real.Query(context.Background(), env.shield, wirea2s.TypeInfoRequest); err != nil {
		t.Fatal(err)
	}
	base := env.plain.Received()
	if base != 2 { // the shield's one refresh: a request that drew the challenge, and the one with it
		t.Fatalf("the game server saw %d datagrams for one refresh, want 2", base)
	}
	shield, err := net.ResolveUDPAddr("udp", env.shield)
	if err != nil {
		t.Fatal(err)
	}
	const sources = 2000
	plain, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)
	wrong, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest, Challenge: 0x12345678, HasChallenge: true}).AppendTo(nil)
	players, _ := (&wirea2s.Request{Type: wirea2s.TypePlayerRequest, Challenge: 0x12345678, HasChallenge: true}).AppendTo(nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var replies, bad int
	work := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			for i := range work {
				ip := net.IPv4(127, byte(10+i/250), byte(i%250), byte(1+i%7))
				conn, err := net.DialUDP("udp", &net.UDPAddr{IP: ip}, shield)
				if err != nil {
					t.Error(err)
					continue
				}
				for _, req := range [][]byte{plain, wrong, players} {
					if _, err := conn.Write(req); err != nil {
						t.Error(err)
						continue
					}
					_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
					n, err := conn.Read(buf)
					mu.Lock()
					switch {
					case err != nil:
						bad++
					case n > len(req) || n != wirea2s.ChallengeLen || buf[4] != byte(wirea2s.TypeChallenge):
						bad++
						t.Errorf("source %v got %d bytes (%x) for a %d-byte request", ip, n, buf[:min(n, 16)], len(req))
					default:
						replies++
					}
					mu.Unlock()
				}
				conn.Close()
			}
		}()
	}
	for i := 0; i < sources; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	// The real client, after the flood, is still served from the cache.
	if _, err := real.Query(context.Background(), env.shield, wirea2s.TypeInfoRequest); err != nil {
		t.Fatal(err)
	}
	if replies != 3*sources || bad != 0 {
		t.Fatalf("%d challenge replies, %d missing or wrong, want %d and 0", replies, bad, 3*sources)
	}
	if got := env.plain.Received(); got != base {
		t.Fatalf("the game server saw %d datagrams during the flood, want 0 (TTL 1h: no refresh due)", got-base)
	}
	t.Logf("%d spoofed sources, %d requests, %d challenge replies of %d bytes; game server datagrams during the flood: %d",
		sources, 3*sources, replies, wirea2s.ChallengeLen, env.plain.Received()-base)
}

// The shield as a gamegate app protocol, under a flood of A2S requests from
// 3000 spoofed sources (1000 loopback addresses, three ports each), without
// a challenge or with a wrong one, while a real client keeps asking through
// it at a 1 s ttl:
//   - every spoofed source gets only 9-byte challenges, never more than it
//     sent;
//   - the game server sees no datagram of the flood: only the real client's
//     refreshes, at most one query of each kind per ttl;
//   - no goroutine is spent per source (caddy-l4 would spend two each);
//   - the real client is answered throughout and after.
func TestA2SAppShieldSpoofedFlood(t *testing.T) {
	if runIsolated(t) {
		return
	}
	env := startA2S(t, "ttl 1s\n\t\t\t\tstale_while_revalidate 1s\n\t\t\t\tstale_if_error 1s", true)
	real := &a2s.Client{Timeout: 2 * time.Second}
	if _, err := real.Query(context.Background(), env.shield, wirea2s.TypeInfoRequest); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()
	upstreamBefore := env.plain.ReceivedOf(wirea2s.TypeInfoRequest)
	shield := netip.MustParseAddrPort(env.shield)

	const addrs, portsPerAddr, workers = 1000, 3, 8
	plain, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)
	wrong, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest, Challenge: 0x12345678, HasChallenge: true}).AppendTo(nil)
	players, _ := (&wirea2s.Request{Type: wirea2s.TypePlayerRequest, Challenge: 0x12345678, HasChallenge: true}).AppendTo(nil)
	rules, _ := (&wirea2s.Request{Type: wirea2s.TypeRulesRequest, Challenge: wirea2s.NoChallenge, HasChallenge: true}).AppendTo(nil)
	requests := [][]byte{plain, wrong, players, rules}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak atomic.Int64
	var realAnswers, realFailures atomic.Int64
	var watchers sync.WaitGroup
	watchers.Add(2)
	go func() { // the goroutine count, sampled throughout
		defer watchers.Done()
		for ctx.Err() == nil {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	go func() { // the real client, asking through the flood
		defer watchers.Done()
		for ctx.Err() == nil {
			if _, err := real.Query(ctx, env.shield, wirea2s.TypeInfoRequest); err == nil {
				realAnswers.Add(1)
			} else if ctx.Err() == nil {
				realFailures.Add(1)
			}
		}
	}()

	var replies, bad atomic.Int64
	var wg sync.WaitGroup
	work := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			for i := range work {
				ip := netip.AddrFrom4([4]byte{127, byte(20 + i/250), byte(i % 250), byte(1 + i%7)})
				for range portsPerAddr {
					conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
					if err != nil {
						t.Error(err)
						return
					}
					for _, req := range requests {
						if _, err := conn.WriteToUDPAddrPort(req, shield); err != nil {
							t.Error(err)
							continue
						}
						_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
						n, err := conn.Read(buf)
						switch {
						case err != nil:
							bad.Add(1)
						case n > len(req) || n != wirea2s.ChallengeLen || buf[4] != byte(wirea2s.TypeChallenge):
							bad.Add(1)
							t.Errorf("source %v got %d bytes (%x) for a %d-byte request", conn.LocalAddr(), n, buf[:min(n, 16)], len(req))
						default:
							replies.Add(1)
						}
					}
					conn.Close()
				}
			}
		}()
	}
	for i := range addrs {
		work <- i
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	cancel()
	watchers.Wait()

	if _, err := real.Query(context.Background(), env.shield, wirea2s.TypeInfoRequest); err != nil {
		t.Fatalf("the real client after the flood: %v", err)
	}
	const sources = addrs * portsPerAddr
	if replies.Load() != int64(len(requests)*sources) || bad.Load() != 0 {
		t.Fatalf("%d challenge replies, %d missing or wrong, want %d and 0", replies.Load(), bad.Load(), len(requests)*sources)
	}
	// Each refresh is two datagrams (the game server challenges A2S_INFO
	// too); at most one refresh starts per ttl, plus the one running when
	// the flood began.
	upstream := env.plain.ReceivedOf(wirea2s.TypeInfoRequest) - upstreamBefore
	if bound := 2 * (int64(elapsed/time.Second) + 2); upstream > bound {
		t.Fatalf("the game server saw %d A2S_INFO datagrams in %v at a 1 s ttl, want at most %d", upstream, elapsed, bound)
	}
	if other := env.plain.ReceivedOf(wirea2s.TypePlayerRequest) + env.plain.ReceivedOf(wirea2s.TypeRulesRequest); other != 0 {
		t.Fatalf("the game server saw %d A2S_PLAYER and A2S_RULES datagrams, want 0 (only spoofed sources asked them)", other)
	}
	if realAnswers.Load() == 0 || realFailures.Load() != 0 {
		t.Fatalf("the real client was answered %d times and failed %d times during the flood", realAnswers.Load(), realFailures.Load())
	}
	// The test's own goroutines: the workers, the two watchers and a few
	// that come and go with Caddy; one per source would be thousands.
	if bound := int64(baseline + workers + 2 + 10); peak.Load() > bound {
		t.Fatalf("goroutines peaked at %d during the flood from %d sources, baseline %d, want at most %d", peak.Load(), sources, baseline, bound)
	}
	t.Logf("%d spoofed sources (%d addresses × %d ports), %d requests in %v: %d challenge replies of %d bytes, none larger than its request; "+
		"game server: %d A2S_INFO datagrams (the real client's refreshes at a 1 s ttl; it was answered %d times), 0 of the flood; goroutines peaked at %d (baseline %d)",
		sources, addrs, portsPerAddr, len(requests)*sources, elapsed.Round(time.Millisecond), replies.Load(), wirea2s.ChallengeLen,
		upstream, realAnswers.Load(), peak.Load(), baseline)
}

// 200 concurrent HTTP requests for a server's status cause one upstream
// query: one A2S_INFO and one A2S_PLAYER exchange (each a request that
// draws the challenge and the request with it).
func TestA2SGatewayCoalesces(t *testing.T) {
	env := startA2S(t, "")
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st query.Status
			if r := getJSON(t, env.base+"/query/direct", &st); r.status != 200 || st.Name != "Plain Server" {
				errs <- fmt.Sprintf("%d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	info, players := env.plain.ReceivedOf(wirea2s.TypeInfoRequest), env.plain.ReceivedOf(wirea2s.TypePlayerRequest)
	if info != 2 || players != 2 {
		t.Fatalf("200 requests: the game server saw %d A2S_INFO and %d A2S_PLAYER datagrams, want 2 and 2 (one query each)", info, players)
	}
}
