package master

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wire "github.com/gamegate/gamegate/wire/master"
)

var heartbeat = wire.AppendHeartbeat(nil, "QuakeArena-1")

// rig is a master on a manual clock, with its verdicts counted.
type rig struct {
	t      testing.TB
	m      *Master
	clock  *testutil.Clock
	counts [NumVerdicts]int
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t, clock: testutil.NewClock(time.Unix(1e9, 0))}
	cfg.Now = r.clock.Now
	cfg.Count = func(v Verdict) { r.counts[v]++ }
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	return r
}

// send serves datagram from src and returns what the master sent.
func (r *rig) send(src string, datagram []byte) []dgram.Datagram {
	r.t.Helper()
	out, matched := dgram.Dispatch([]dgram.Protocol{r.m}, netip.MustParseAddrPort(src), datagram)
	if !matched {
		r.t.Fatalf("%q from %s: not matched", datagram, src)
	}
	return out
}

// challenge sends a heartbeat from src and returns the getinfo challenge.
func (r *rig) challenge(src string) []byte {
	r.t.Helper()
	out := r.send(src, heartbeat)
	if len(out) != 1 || out[0].To.String() != src {
		r.t.Fatalf("heartbeat from %s: sent %v, want one getinfo to it", src, out)
	}
	c, err := wire.DecodeGetInfo(out[0].Data)
	if err != nil {
		r.t.Fatalf("getinfo %q: %v", out[0].Data, err)
	}
	return c
}

func infoResponse(challenge []byte, extra string) []byte {
	return wire.AppendInfoResponse(nil, []byte(`\sv_maxclients\8\clients\1\protocol\71\gamename\Quake3Arena\mapname\oa_dm1`+extra+`\challenge\`+string(challenge)))
}

// register lists the server at src through a heartbeat and its answer.
func (r *rig) register(src, extra string) {
	r.t.Helper()
	c := r.challenge(src)
	if out := r.send(src, infoResponse(c, extra)); len(out) != 0 {
		r.t.Fatalf("infoResponse answered: %v", out)
	}
}

// list asks for the servers with query from src and returns the listed
// addresses, checking the datagrams' shape.
func (r *rig) list(src, query string) []string {
	r.t.Helper()
	out := r.send(src, []byte(wire.Header+query))
	var got []string
	for i, d := range out {
		if d.To.String() != src {
			r.t.Fatalf("list datagram sent to %s, want %s", d.To, src)
		}
		if len(d.Data) > wire.MaxResponseDatagram {
			r.t.Fatalf("list datagram of %d bytes, want at most %d", len(d.Data), wire.MaxResponseDatagram)
		}
		addrs, _, eot, err := wire.DecodeResponse(d.Data, nil)
		if err != nil || eot != (i == len(out)-1) {
			r.t.Fatalf("datagram %d of %d: eot=%v, %v", i+1, len(out), eot, err)
		}
		for _, a := range addrs {
			got = append(got, a.String())
		}
	}
	return got
}

func TestRegisterOnlyWithTheChallenge(t *testing.T) {
	r := newRig(t, Config{})
	const srv = "127.0.0.1:27960"
	c := r.challenge(srv)
	if len(c) != maxChallengeSent || wire.GetInfoLen(len(c)) > len(heartbeat) {
		t.Fatalf("challenge %q for a %d-byte heartbeat", c, len(heartbeat))
	}
	if got := r.list("127.0.0.1:5000", "getservers 71 empty full"); len(got) != 0 {
		t.Fatalf("listed before its infoResponse: %v", got)
	}
	// Another port of the same host, and the right port with a wrong
	// challenge, do not register it.
	r.send("127.0.0.1:27961", infoResponse(c, ""))
	r.send(srv, infoResponse([]byte("wrongwrong12"), ""))
	if got := r.list("127.0.0.1:5000", "getservers 71 empty full"); len(got) != 0 || r.counts[DroppedUnexpected] != 2 {
		t.Fatalf("listed %v after wrong answers (%d unexpected)", got, r.counts[DroppedUnexpected])
	}
	r.send(srv, infoResponse(c, ""))
	if got := r.list("127.0.0.1:5000", "getservers 71 empty full"); fmt.Sprint(got) != "["+srv+"]" || r.counts[Registered] != 1 {
		t.Fatalf("got %v, want [%s]", got, srv)
	}
	// The challenge is used up.
	r.send(srv, infoResponse(c, ""))
	if r.counts[DroppedUnexpected] != 3 || r.counts[Refreshed] != 0 {
		t.Fatalf("a challenge answered twice: %v", r.counts)
	}
}

func TestGetInfoNoLargerThanHeartbeat(t *testing.T) {
	r := newRig(t, Config{})
	for i, proto := range []string{"QuakeArena-1", "DarkPlaces", "Warsow", "abcd", "Q"} {
		hb := wire.AppendHeartbeat(nil, proto)
		src := fmt.Sprintf("127.0.0.%d:27960", i+1)
		out := r.send(src, hb)
		if len(out) > 1 || len(out) == 1 && len(out[0].Data) > len(hb) {
			t.Fatalf("heartbeat %q (%d bytes) answered with %v", proto, len(hb), out)
		}
		wantAnswer := len(hb)-wire.GetInfoLen(0) >= minChallengeSent
		if (len(out) == 1) != wantAnswer {
			t.Fatalf("heartbeat %q (%d bytes): answered %v, want %v", proto, len(hb), len(out) == 1, wantAnswer)
		}
		if len(out) == 1 {
			c, err := wire.DecodeGetInfo(out[0].Data)
			if err != nil || len(c) < minChallengeSent {
				t.Fatalf("challenge %q: %v", c, err)
			}
		}
	}
}

func TestChallengeTimeoutNotExtended(t *testing.T) {
	r := newRig(t, Config{ChallengeTimeout: duration.Duration(2 * time.Second)})
	const srv = "127.0.0.1:27960"
	c := r.challenge(srv)
	r.clock.Advance(1500 * time.Millisecond)
	if out := r.send(srv, heartbeat); len(out) != 0 || r.counts[HeartbeatPending] != 1 {
		t.Fatalf("a heartbeat while a challenge waits: sent %v", out)
	}
	r.clock.Advance(600 * time.Millisecond)
	r.send(srv, infoResponse(c, ""))
	if r.counts[Registered] != 0 || r.counts[DroppedUnexpected] != 1 {
		t.Fatalf("an answer after the timeout registered: %v", r.counts)
	}
	// A new heartbeat gets a new challenge.
	c2 := r.challenge(srv)
	r.send(srv, infoResponse(c2, ""))
	if r.counts[Registered] != 1 {
		t.Fatalf("not registered with a new challenge: %v", r.counts)
	}
}

func TestExpiry(t *testing.T) {
	r := newRig(t, Config{Expiry: duration.Duration(15 * time.Minute)})
	const srv, client = "127.0.0.1:27960", "127.0.0.1:5000"
	r.register(srv, "")
	r.clock.Advance(10 * time.Minute)
	// A heartbeat alone does not refresh it.
	r.challenge(srv)
	r.clock.Advance(5*time.Minute + time.Second)
	if got := r.list(client, "getservers 71 empty full"); len(got) != 0 {
		t.Fatalf("listed after the expiry: %v", got)
	}
	if n, _ := r.m.Registry().Len(); n != 0 {
		t.Fatalf("%d servers kept after the expiry", n)
	}
	r.register(srv, "")
	r.clock.Advance(10 * time.Minute)
	r.register(srv, "") // refreshed
	r.clock.Advance(10 * time.Minute)
	if got := r.list(client, "getservers 71 empty full"); len(got) != 1 || r.counts[Refreshed] != 1 {
		t.Fatalf("refreshed server: got %v, %v", got, r.counts)
	}
}

func TestFilters(t *testing.T) {
	r := newRig(t, Config{ListRate: 1e6})
	// 127.0.0.1: protocol 71, 1 of 8 clients, gametype 0 (the default).
	r.register("127.0.0.1:1", "")
	empty := func(src string) {
		c := r.challenge(src)
		r.send(src, wire.AppendInfoResponse(nil, []byte(`\sv_maxclients\8\clients\0\protocol\71\challenge\`+string(c))))
	}
	empty("127.0.0.1:2")
	full := func(src string) {
		c := r.challenge(src)
		r.send(src, wire.AppendInfoResponse(nil, []byte(`\sv_maxclients\2\clients\2\gametype\4\protocol\71\challenge\`+string(c))))
	}
	full("127.0.0.1:3")
	nexuiz := func(src string) {
		c := r.challenge(src)
		r.send(src, wire.AppendInfoResponse(nil, []byte(`\gamename\Nexuiz\sv_maxclients\8\clients\1\protocol\3\challenge\`+string(c))))
	}
	nexuiz("127.0.0.1:4")
	nexuiz("[::1]:5")
	for _, tc := range []struct{ query, want string }{
		{"getservers 71", "[127.0.0.1:1]"},
		{"getservers 71 empty", "[127.0.0.1:1 127.0.0.1:2]"},
		{"getservers 71 full", "[127.0.0.1:1 127.0.0.1:3]"},
		{"getservers 71 empty full", "[127.0.0.1:1 127.0.0.1:2 127.0.0.1:3]"},
		{"getservers 71 empty full ctf", "[127.0.0.1:3]"},
		{"getservers 71 empty full gametype=0", "[127.0.0.1:1 127.0.0.1:2]"},
		{"getservers 68 empty full", "[]"},
		{"getserversExt Quake3Arena 71 empty full", "[127.0.0.1:1 127.0.0.1:2 127.0.0.1:3]"},
		{"getservers Nexuiz 3", "[127.0.0.1:4]"},
		{"getserversExt Nexuiz 3", "[127.0.0.1:4 [::1]:5]"},
		{"getserversExt Nexuiz 3 ipv6", "[[::1]:5]"},
		{"getserversExt Nexuiz 3 ipv4", "[127.0.0.1:4]"},
		{"getservers nexuiz 3", "[]"},
	} {
		got := r.list("127.0.0.1:5000", tc.query)
		if fmt.Sprint(sorted(got)) != tc.want {
			t.Errorf("%s: got %v, want %s", tc.query, got, tc.want)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestScope checks that a list never hands a client an address of a
// narrower scope than its own: loopback servers go to loopback clients,
// private ones to private and loopback clients.
func TestScope(t *testing.T) {
	r := newRig(t, Config{})
	r.register("127.0.0.1:1", "")
	r.register("10.0.0.1:1", "")
	r.register("198.51.100.1:1", "")
	for _, tc := range []struct{ client, want string }{
		{"127.0.0.1:5000", "[10.0.0.1:1 127.0.0.1:1 198.51.100.1:1]"},
		{"10.0.0.9:5000", "[10.0.0.1:1 198.51.100.1:1]"},
		{"203.0.113.9:5000", "[198.51.100.1:1]"},
	} {
		if got := r.list(tc.client, "getservers 71"); fmt.Sprint(sorted(got)) != tc.want {
			t.Errorf("client %s: got %v, want %s", tc.client, got, tc.want)
		}
	}
}

// registerMany lists n servers on 127.0.0.1 and [::1] ports from 1.
func registerMany(r *rig, n int, ip string) {
	for i := 1; i <= n; i++ {
		src := netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(i)).String()
		r.register(src, "")
	}
}

func TestListSplit(t *testing.T) {
	r := newRig(t, Config{MaxServersPerAddress: 1000, HeartbeatRate: 1e6, MaxReplyDatagrams: 100})
	registerMany(r, 700, "127.0.0.1")
	registerMany(r, 100, "::1")
	for _, query := range []string{"getservers 71", "getserversExt Quake3Arena 71"} {
		out := r.send("127.0.0.1:5000", []byte(wire.Header+query))
		got := r.list("127.0.0.1:5000", query)
		want := 700
		if strings.Contains(query, "Ext") {
			want = 800
		}
		seen := map[string]bool{}
		for _, a := range got {
			seen[a] = true
		}
		if len(got) != want || len(seen) != want {
			t.Fatalf("%s: %d entries (%d distinct), want %d", query, len(got), len(seen), want)
		}
		// Full datagrams: none could have taken one more entry.
		for _, d := range out[:len(out)-1] {
			if len(d.Data)+wire.EntryLenIPv6+wire.EOTLen <= wire.MaxResponseDatagram {
				t.Fatalf("%s: a datagram of %d bytes was not filled", query, len(d.Data))
			}
		}
	}
	if r.counts[ListCut] != 0 {
		t.Fatalf("cut: %v", r.counts)
	}
}

func TestListCut(t *testing.T) {
	r := newRig(t, Config{MaxServersPerAddress: 1000, HeartbeatRate: 1e6, MaxReplyDatagrams: 2})
	registerMany(r, 700, "127.0.0.1")
	out := r.send("127.0.0.1:5000", []byte(wire.Header+"getservers 71"))
	if len(out) != 2 || r.counts[ListCut] != 1 {
		t.Fatalf("%d datagrams (%v), want 2, cut", len(out), r.counts)
	}
	if _, _, eot, err := wire.DecodeResponse(out[1].Data, nil); !eot || err != nil {
		t.Fatalf("the cut list's last datagram does not end it: %v", err)
	}
}

func TestServerLimits(t *testing.T) {
	r := newRig(t, Config{MaxServers: 5, MaxServersPerAddress: 3, HeartbeatRate: 1e6})
	registerMany(r, 4, "127.0.0.1")
	registerMany(r, 4, "127.0.0.2")
	if n, _ := r.m.Registry().Len(); n != 5 || r.counts[DroppedServersFull] != 3 {
		t.Fatalf("%d servers, %d refused; want 5 and 3", n, r.counts[DroppedServersFull])
	}
	// A listed server still refreshes when the table is full.
	r.register("127.0.0.1:1", "")
	if r.counts[Refreshed] != 1 {
		t.Fatalf("refresh refused when full: %v", r.counts)
	}
}

func TestChallengeLimit(t *testing.T) {
	r := newRig(t, Config{MaxChallenges: 10, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(time.Second)})
	for i := 1; i <= 20; i++ {
		r.send(fmt.Sprintf("127.0.0.1:%d", i), heartbeat)
	}
	if _, n := r.m.Registry().Len(); n != 10 || r.counts[ChallengedEvicting] != 10 || r.counts[Challenged] != 10 {
		t.Fatalf("%d challenges waiting, %v", n, r.counts)
	}
	// The newest challenge waits; ten of the twenty were forgotten.
	waiting := 0
	for i := 1; i <= 20; i++ {
		if r.m.Registry().waiting(netip.MustParseAddrPort(fmt.Sprintf("127.0.0.1:%d", i))) {
			waiting++
		}
	}
	if waiting != 10 || !r.m.Registry().waiting(netip.MustParseAddrPort("127.0.0.1:20")) {
		t.Fatalf("%d of 20 waiting, the last among them: %v", waiting, r.m.Registry().waiting(netip.MustParseAddrPort("127.0.0.1:20")))
	}
	r.clock.Advance(2 * time.Second)
	r.challenge("127.0.0.1:100")
	if _, n := r.m.Registry().Len(); n != 1 {
		t.Fatalf("%d challenges waiting after the timeout, want 1", n)
	}
}

func TestRateLimits(t *testing.T) {
	r := newRig(t, Config{HeartbeatRate: 1, HeartbeatBurst: 3, ListRate: 1, ListBurst: 2, MaxSources: 32})
	for i := 1; i <= 10; i++ {
		r.send(fmt.Sprintf("127.0.0.1:%d", i), heartbeat)
	}
	if r.counts[Challenged] != 3 || r.counts[DroppedRateLimited] != 7 {
		t.Fatalf("heartbeats: %v, want 3 challenged, 7 limited", r.counts)
	}
	// Another address has its own share; lists have their own limit.
	r.challenge("127.0.0.2:1")
	for range 5 {
		r.send("127.0.0.1:5000", []byte(wire.Header+"getservers 71"))
	}
	if r.counts[Listed] != 2 || r.counts[DroppedRateLimited] != 10 {
		t.Fatalf("lists: %v, want 2 listed", r.counts)
	}
	r.clock.Advance(time.Second)
	if out := r.send("127.0.0.1:5000", []byte(wire.Header+"getservers 71")); len(out) != 1 {
		t.Fatalf("a list a second later: %v", out)
	}
	// Many sources: the tables stay within max_sources.
	for i := range 1000 {
		r.send(fmt.Sprintf("10.0.%d.%d:1", i/250, i%250+1), heartbeat)
	}
	if h, _ := r.m.Sources(); h > 32 {
		t.Fatalf("%d heartbeat sources kept, want at most 32", h)
	}
}

// Sources of networks of their own share the open part of the budget:
// reply_burst less known_reply_burst at once, whole answers only.
func TestReplyBudget(t *testing.T) {
	r := newRig(t, Config{ReplyRate: 10, ReplyBurst: 10, KnownReplyRate: 2, KnownReplyBurst: 3, ListRate: 1e6, ListBurst: 1000})
	sent := 0
	for i := range 50 {
		sent += len(r.send(fmt.Sprintf("127.0.%d.1:5000", i+1), []byte(wire.Header+"getservers 71")))
	}
	if sent != 7 || r.counts[DroppedOverCapacity] != 43 {
		t.Fatalf("%d datagrams sent, %v; want 7", sent, r.counts)
	}
}

// A network takes at most its share of the budget, whatever the number of
// its sources; another network is still answered.
func TestNetworkReplyShare(t *testing.T) {
	r := newRig(t, Config{ReplyRate: 100, ReplyBurst: 100, NetworkReplyRate: 1, NetworkReplyBurst: 5,
		ListRate: 1e6, ListBurst: 1000, MaxServersPerAddress: 1000, HeartbeatRate: 1e6, MaxReplyDatagrams: 100})
	registerMany(r, 300, "127.0.0.1") // two datagrams a list
	sent := 0
	for i := range 50 {
		sent += len(r.send(fmt.Sprintf("127.0.7.%d:5000", i+1), []byte(wire.Header+"getservers 71")))
	}
	if sent != 4 || r.counts[Listed] != 2 || r.counts[DroppedNetworkOverCapacity] != 48 || r.counts[ListCut] != 0 {
		t.Fatalf("one network: %d datagrams sent, %v; want two whole lists, 4 datagrams", sent, r.counts)
	}
	if got := r.list("127.0.8.1:5000", "getservers 71"); len(got) != 300 {
		t.Fatalf("another network got %d servers, want 300", len(got))
	}
}

// List requests forged from many networks drain the open part of the
// budget; a known source still gets its whole list from the part kept for
// known sources: one answered while the budget was calm (and stayed calm
// KnownSourceSettle after), and the address of a listed server. A new
// source is not answered meanwhile, nor one the flood's first requests
// came from (answered while the budget was still calm); the part kept is
// bounded too.
func TestKnownSourcesKeepTheirList(t *testing.T) {
	const servers = 600 // four datagrams
	r := newRig(t, Config{ReplyRate: 100, ReplyBurst: 40, KnownReplyRate: 10, KnownReplyBurst: 12, NetworkReplyBurst: 100,
		ListRate: 1e6, ListBurst: 1000, MaxServersPerAddress: 1000, HeartbeatRate: 1e6, MaxReplyDatagrams: 100})
	registerMany(r, servers, "127.0.0.1")
	const client, listed = "127.0.200.1:27960", "127.0.0.1:27960"
	if got := r.list(client, "getservers 71"); len(got) != servers {
		t.Fatalf("calm: %d servers, want %d", len(got), servers)
	}
	r.clock.Advance(KnownSourceSettle + time.Second)
	flood := 0
	for i := range 1000 {
		flood += len(r.send(fmt.Sprintf("127.%d.%d.1:5000", 1+i/250, i%250), []byte(wire.Header+"getservers 71")))
	}
	if flood != 28 || r.counts[DroppedOverCapacity] != 993 {
		t.Fatalf("the flood got %d datagrams, %v; want reply_burst less known_reply_burst, 28", flood, r.counts)
	}
	for _, src := range []string{"127.0.201.1:27960", "127.1.0.1:5000"} {
		if out := r.send(src, []byte(wire.Header+"getservers 71")); len(out) != 0 {
			t.Fatalf("%s, new or answered at the flood's start, got %d datagrams kept for known sources", src, len(out))
		}
	}
	for _, src := range []string{client, listed, client} {
		if got := r.list(src, "getservers 71"); len(got) != servers {
			t.Fatalf("%s, known, during the flood: %d servers, want %d", src, len(got), servers)
		}
	}
	// The part kept (12 at once) held three answers of four datagrams.
	if out := r.send(client, []byte(wire.Header+"getservers 71")); len(out) != 0 {
		t.Fatalf("a known source got %d datagrams past known_reply_burst", len(out))
	}
}

func TestMalformedDropped(t *testing.T) {
	r := newRig(t, Config{})
	for _, b := range []string{"heartbeat", "heartbeat \n", "getservers", "getserversExt 71", "getservers x y"} {
		if out := r.send("127.0.0.1:1", []byte(wire.Header+b)); len(out) != 0 {
			t.Fatalf("%q answered: %v", b, out)
		}
	}
	if r.counts[DroppedMalformed] != 5 {
		t.Fatalf("%v", r.counts)
	}
	if r.m.Match([]byte(wire.Header+"getstatus x")) || r.m.Match([]byte(wire.Header+"getserversResponse\\")) {
		t.Fatal("matched what a master does not receive")
	}
}

// buffer is a sender that keeps nothing, for counting allocations.
type buffer struct {
	b    []byte
	sent int
}

func (b *buffer) Buffer(n int) []byte                 { return b.b[:0] }
func (b *buffer) WriteTo(d []byte, to netip.AddrPort) { b.sent += len(d) }

func TestServeAllocs(t *testing.T) {
	r := newRig(t, Config{MaxServersPerAddress: 1000, HeartbeatRate: 1e9, ListRate: 1e9, ReplyRate: 1e9})
	registerMany(r, 300, "127.0.0.1")
	w := &buffer{b: make([]byte, 0, wire.MaxResponseDatagram)}
	src := netip.MustParseAddrPort("127.0.0.1:5000")
	srv := netip.MustParseAddrPort("127.0.0.1:1")
	list := []byte(wire.Header + "getservers 71 empty full")
	var info []byte
	allocs := testing.AllocsPerRun(100, func() {
		if v := r.m.serve(w, src, list); v != Listed {
			t.Fatalf("list: %v", v)
		}
		r.clock.Advance(3 * time.Second)
		if v := r.m.serve(w, srv, heartbeat); v != Challenged {
			t.Fatalf("heartbeat: %v", v)
		}
		c, _ := wire.DecodeGetInfo(w.b[:wire.GetInfoLen(12)])
		info = append(info[:0], wire.Header+"infoResponse\n\\sv_maxclients\\8\\clients\\1\\protocol\\71\\challenge\\"...)
		info = append(info, c...)
		if v := r.m.serve(w, srv, info); v != Refreshed {
			t.Fatalf("infoResponse: %v", v)
		}
	})
	if allocs != 0 && !testutil.Race {
		t.Fatalf("got %v allocations, want 0", allocs)
	}
	if !bytes.Contains(info, []byte("challenge")) {
		t.Fatal("no info")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxServers: -1}, "max_servers"},
		{Config{MaxServersPerAddress: MaxMaxServers + 1}, "max_servers_per_address"},
		{Config{Expiry: duration.Duration(time.Millisecond)}, "expiry"},
		{Config{ChallengeTimeout: duration.Duration(time.Hour)}, "challenge_timeout"},
		{Config{MaxChallenges: -5}, "max_challenges"},
		{Config{HeartbeatRate: -1}, "heartbeat_rate"},
		{Config{ListRate: 1, ListBurst: -1}, "list_burst"},
		{Config{MaxSources: MaxMaxSources + 1}, "max_sources"},
		{Config{MaxReplyDatagrams: 2000}, "max_reply_datagrams"},
		{Config{ReplyRate: 1e-10}, "reply_rate"},
		{Config{ClientIPv6Prefix: 8}, "client_ipv6_prefix"},
		{Config{Name: strings.Repeat("n", MaxNameLen+1)}, "name"},
		{Config{Name: "a\x00b"}, "name"},
		{Config{NetworkReplyRate: -1}, "network_reply_rate"},
		{Config{NetworkReplyRate: 5, NetworkReplyBurst: -1}, "network_reply_burst"},
		{Config{KnownReplyRate: 1000}, "known_reply_rate"},
		{Config{ReplyRate: 10, ReplyBurst: 10, KnownReplyBurst: 10}, "known_reply_burst"},
		{Config{ReplyRate: 1e-9}, "reply_rate"},
		{Config{SharedNetworks: []string{"10.0.0.0/8", "10.0.0.1"}}, "shared_networks:"},
		{Config{SharedNetworks: make([]string, MaxSharedNetworks+1)}, "shared_networks:"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want+" ") {
			t.Errorf("%+v: got %v, want an error naming %s", tc.cfg, err, tc.want)
		}
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("New(%+v) accepted", tc.cfg)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if d := (Config{ReplyRate: 10, ReplyBurst: 5, KnownReplyRate: 8}).WithDefaults(); d.KnownReplyBurst != 4 {
		t.Errorf("known_reply_burst %d by default with reply_burst 5, want 4", d.KnownReplyBurst)
	}
	if err := (Config{Name: strings.Repeat("é", MaxNameLen/2)}).Validate(); err != nil {
		t.Fatalf("a name of %d bytes: %v", MaxNameLen, err)
	}
	if got := (Config{}).WithDefaults().Name; got != DefaultName {
		t.Errorf("name %q by default, want %q", got, DefaultName)
	}
	if got := (Config{Name: "public"}).WithDefaults().Name; got != "public" {
		t.Errorf("name %q given public, want public", got)
	}
}

// FuzzServe serves any datagram to a master listing a few servers: never
// a panic; nothing but a list answer (at most max_reply_datagrams
// datagrams of at most 1400 bytes) is larger than the datagram it answers.
func FuzzServe(f *testing.F) {
	for _, s := range []string{"heartbeat QuakeArena-1\n", "getservers 71 empty full", "getserversExt Quake3Arena 71",
		"infoResponse\n\\sv_maxclients\\8\\clients\\1\\protocol\\71\\challenge\\abcdefgh", "getservers Nexuiz 3 ctf"} {
		f.Add([]byte(wire.Header + s))
	}
	r := newRig(f, Config{HeartbeatRate: 1e9, ListRate: 1e9, ReplyRate: 1e9, MaxReplyDatagrams: 3, MaxServersPerAddress: 1000})
	registerMany(r, 500, "127.0.0.1")
	f.Fuzz(func(t *testing.T, b []byte) {
		out, matched := dgram.Dispatch([]dgram.Protocol{r.m}, netip.MustParseAddrPort("127.0.0.1:5000"), b)
		if !matched && len(out) > 0 {
			t.Fatal("answered what it did not match")
		}
		list := wire.Peek(b) == wire.KindGetServers || wire.Peek(b) == wire.KindGetServersExt
		if len(out) > 3 {
			t.Fatalf("%d datagrams", len(out))
		}
		for _, d := range out {
			if d.To.String() != "127.0.0.1:5000" || len(d.Data) > wire.MaxResponseDatagram || !list && len(d.Data) > len(b) {
				t.Fatalf("sent %d bytes to %s for %d", len(d.Data), d.To, len(b))
			}
		}
	})
}

// Heartbeats forged from one source (here its ports) never make another
// source's waiting challenge forgotten: past max_challenges_per_address
// that source's heartbeats are dropped, and the victim's challenge still
// registers it.
func TestForgedHeartbeatsKeepOthersChallenges(t *testing.T) {
	r := newRig(t, Config{MaxChallenges: 64, MaxChallengesPerAddress: 8, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(time.Minute)})
	const victim = "127.0.0.5:27960"
	c := r.challenge(victim)
	for i := 1; i <= 1000; i++ {
		r.send(fmt.Sprintf("127.0.0.66:%d", i), heartbeat)
	}
	if _, n := r.m.Registry().Len(); n != 9 || r.counts[DroppedChallengesFull] != 992 || r.counts[ChallengedEvicting] != 0 {
		t.Fatalf("%d challenges waiting, %v; want 9 and 992 heartbeats dropped", n, r.counts)
	}
	r.send(victim, infoResponse(c, ""))
	if r.counts[Registered] != 1 {
		t.Fatalf("the victim's answer did not register it: %v", r.counts)
	}
}

// When max_challenges wait in all, from many sources, the one forgotten
// to make room is mostly one of the source with the most waiting: a
// flood from a few sources forgets its own challenges, not a lone
// server's.
func TestChallengeEvictionPrefersTheBusiestSource(t *testing.T) {
	r := newRig(t, Config{MaxChallenges: 64, MaxChallengesPerAddress: 32, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(time.Minute)})
	victims := []string{"127.0.1.1:27960", "127.0.1.2:27960", "127.0.1.3:27960", "127.0.1.4:27960"}
	challenges := make([][]byte, len(victims))
	for i, v := range victims {
		challenges[i] = r.challenge(v)
	}
	// Two flooding sources of 32 each fill the table, then keep coming
	// (each heartbeat takes the place of one forgotten).
	for round := range 20 {
		for i := 1; i <= 32; i++ {
			r.send(fmt.Sprintf("127.0.0.%d:%d", 66+round%2, 1000*round+i), heartbeat)
		}
	}
	if _, n := r.m.Registry().Len(); n != 64 || r.counts[ChallengedEvicting] == 0 {
		t.Fatalf("%d challenges waiting, %v", n, r.counts)
	}
	for i, v := range victims {
		r.send(v, infoResponse(challenges[i], ""))
	}
	if r.counts[Registered] != len(victims) {
		t.Fatalf("%d of %d lone servers registered after the flood: %v", r.counts[Registered], len(victims), r.counts)
	}
}

// A flood of heartbeats forged from 1000 addresses, one challenge each,
// makes room by forgetting its own challenges, not the one waiting for a
// server already listed (here every forged address is in a network of
// its own), nor a new server's when the flood comes from a few networks.
func TestChallengeEvictionKeepsListedAndQuietNetworks(t *testing.T) {
	r := newRig(t, Config{MaxChallenges: 64, MaxChallengesPerAddress: 8, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(time.Minute)})
	const listed = "203.0.113.5:27960"
	r.register(listed, "")
	c := r.challenge(listed) // its next heartbeat
	for i := range 1000 {
		r.send(fmt.Sprintf("10.%d.%d.1:27960", i/256, i%256), heartbeat)
	}
	r.send(listed, infoResponse(c, ""))
	if r.counts[ChallengedEvicting] < 900 || r.counts[Refreshed] != 1 {
		t.Fatalf("a listed server's challenge through a flood from 1000 networks: %v", r.counts)
	}

	r = newRig(t, Config{MaxChallenges: 64, MaxChallengesPerAddress: 8, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(time.Minute)})
	const newcomer = "203.0.113.9:27960"
	c = r.challenge(newcomer)
	for i := range 1000 {
		r.send(fmt.Sprintf("198.18.%d.%d:27960", i%4, i/4), heartbeat)
	}
	r.send(newcomer, infoResponse(c, ""))
	if r.counts[ChallengedEvicting] < 900 || r.counts[Registered] != 1 {
		t.Fatalf("a new server's challenge through a flood from 4 networks: %v", r.counts)
	}
}

// What the registry keeps of an infoResponse is bounded: the keys a list
// shows, each value cut to MaxInfoValue bytes, whatever the server sent.
func TestRegistryKeepsBoundedInfo(t *testing.T) {
	r := newRig(t, Config{HeartbeatRate: 1e6})
	long := strings.Repeat("N", 3000)
	r.register("127.0.0.1:27960", `\hostname\`+long+`\junk\`+strings.Repeat("j", 500))
	servers := r.m.Registry().Servers(nil)
	if len(servers) != 1 {
		t.Fatalf("%d servers listed", len(servers))
	}
	info := servers[0].Info
	name, ok := wire.InfoValue(info, "hostname")
	if !ok || len(name) != MaxInfoValue || bytes.Contains(info, []byte("junk")) {
		t.Fatalf("kept %d bytes of info, a hostname of %d bytes (want %d), junk kept: %v", len(info), len(name), MaxInfoValue, bytes.Contains(info, []byte("junk")))
	}
	if m, _ := wire.InfoValue(info, "mapname"); string(m) != "oa_dm1" {
		t.Fatalf("mapname %q", m)
	}
	if max := len(InfoKeys) * (MaxInfoValue + 16); len(info) > max {
		t.Fatalf("kept %d bytes of info, want at most %d", len(info), max)
	}
}

// Heartbeats forged from a listed server's IP on other ports fill that
// address's challenge quota, yet the server's own heartbeat is still
// challenged, so it is never delisted by them.
func TestForgedHeartbeatsFromAListedServersIPKeepItListed(t *testing.T) {
	r := newRig(t, Config{MaxChallenges: 64, MaxChallengesPerAddress: 8, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(2 * time.Second)})
	const listed = "203.0.113.5:27960"
	r.register(listed, "")
	for i := range 8 {
		r.send(fmt.Sprintf("203.0.113.5:%d", 40000+i), heartbeat)
	}
	if out := r.send(listed, heartbeat); len(out) != 1 {
		t.Fatalf("the listed server's heartbeat after 8 forged from its IP: got %d datagrams back, want its challenge; counts %v", len(out), r.counts)
	}
	// An unlisted port of the same IP is still held to the quota.
	if out := r.send("203.0.113.5:40100", heartbeat); len(out) != 0 {
		t.Fatalf("a ninth forged heartbeat from the IP: got %d datagrams back, want none", len(out))
	}
}

// Heartbeats forged from as many networks as heartbeats make a new
// server's waiting challenge forgotten (max_challenges), yet its answer
// still lists it: a full-length challenge is checked by its keyed hash,
// not looked up. Such a check still refuses another address's or port's
// challenge, a late one, a forged one, and one used already.
func TestForgottenChallengeStillRegisters(t *testing.T) {
	r := newRig(t, Config{MaxChallenges: 16, HeartbeatRate: 1e6, ChallengeTimeout: duration.Duration(2 * time.Second)})
	const srv, other = "203.0.113.9:27960", "203.0.113.9:27961"
	c := r.challenge(srv)
	if len(c) != maxChallengeSent {
		t.Fatalf("challenge %q: want %d characters", c, maxChallengeSent)
	}
	for i := range 1000 {
		r.send(fmt.Sprintf("10.%d.%d.1:27960", i/256, i%256), heartbeat)
	}
	if r.m.reg.waiting(netip.MustParseAddrPort(srv)) {
		t.Fatal("the server's challenge survived the flood: the test tests nothing")
	}
	forged := bytes.Clone(c)
	forged[len(forged)-1] ^= 1 // another character of the alphabet
	r.send(other, infoResponse(c, ""))
	r.send(srv, infoResponse(forged, ""))
	r.send(srv, infoResponse([]byte(string(c[:2])+"0123456789"), ""))
	if r.counts[Registered] != 0 || r.counts[DroppedUnexpected] != 3 {
		t.Fatalf("registered with a wrong challenge: %v", r.counts)
	}
	r.clock.Advance(time.Second)
	r.send(srv, infoResponse(c, ""))
	if r.counts[Registered] != 1 {
		t.Fatalf("the answer to a forgotten challenge did not register the server: %v", r.counts)
	}
	r.send(srv, infoResponse(c, "")) // replayed
	if r.counts[Refreshed] != 0 || r.counts[DroppedUnexpected] != 4 {
		t.Fatalf("a challenge used twice: %v", r.counts)
	}
	// A late answer, forgotten or not, is refused.
	c2 := r.challenge(srv)
	for i := range 1000 {
		r.send(fmt.Sprintf("10.%d.%d.2:27960", i/256, i%256), heartbeat)
	}
	r.clock.Advance(2 * time.Second)
	r.send(srv, infoResponse(c2, ""))
	if r.counts[Refreshed] != 0 || r.counts[DroppedUnexpected] != 5 {
		t.Fatalf("an answer after challenge_timeout: %v", r.counts)
	}
}

// The registry's generation changes when a server is listed, refreshed or
// forgotten, and not when the list is read or a heartbeat waits for its
// answer.
func TestRegistryGeneration(t *testing.T) {
	r := newRig(t, Config{Expiry: duration.Duration(15 * time.Minute)})
	reg := r.m.Registry()
	const srv, client = "127.0.0.1:27960", "127.0.0.1:5000"
	step := func(what string, changes bool, do func()) {
		t.Helper()
		before := reg.Generation()
		do()
		if changed := reg.Generation() != before; changed != changes {
			t.Fatalf("%s: generation changed %v, want %v", what, changed, changes)
		}
	}
	var c []byte
	step("a heartbeat", false, func() { c = r.challenge(srv) })
	step("a registration", true, func() { r.send(srv, infoResponse(c, "")) })
	step("reading the list", false, func() { reg.Servers(nil); r.list(client, "getservers 71 empty full") })
	step("a refresh", true, func() { r.register(srv, `\hostname\Renamed`) })
	r.clock.Advance(16 * time.Minute)
	step("the expiry swept", true, func() { reg.Len() })
}
