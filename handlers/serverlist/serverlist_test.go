package serverlist

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wire "github.com/gamegate/gamegate/wire/master"
)

// register lists a server at src with info through a master's heartbeat
// and answer.
func register(t testing.TB, m *master.Master, src, info string) {
	t.Helper()
	p := []dgram.Protocol{m}
	a := netip.MustParseAddrPort(src)
	out, _ := dgram.Dispatch(p, a, wire.AppendHeartbeat(nil, "QuakeArena-1"))
	if len(out) != 1 {
		t.Fatalf("heartbeat: %v", out)
	}
	c, _ := wire.DecodeGetInfo(out[0].Data)
	dgram.Dispatch(p, a, wire.AppendInfoResponse(nil, []byte(info+`\protocol\71\challenge\`+string(c))))
}

type rig struct {
	list     *List
	queries  atomic.Int32
	clock    *testutil.Clock
	reg      *master.Registry
	master   *master.Master
	statuses *Statuses
}

func newRig(t *testing.T, live map[string]*query.Status) *rig {
	t.Helper()
	return newQueryRig(t, func(addr string) (*query.Status, error) {
		if st, ok := live[addr]; ok {
			return st, nil
		}
		return nil, fmt.Errorf("no answer")
	})
}

// newQueryRig is newRig with the statuses status answers.
func newQueryRig(t *testing.T, status func(addr string) (*query.Status, error)) *rig {
	t.Helper()
	r := &rig{clock: testutil.NewClock(time.Unix(1e9, 0))}
	reg := master.NewRegistry(r.clock.Now)
	m, err := master.New(master.Config{Registry: reg, Now: r.clock.Now, HeartbeatRate: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	register(t, m, "127.0.0.1:1", `\hostname\^1Red ^7Arena\mapname\oa_dm1\clients\3\sv_maxclients\8\g_needpass\0`)
	register(t, m, "127.0.0.1:2", `\hostname\Empty\mapname\oa_dm2\clients\0\sv_maxclients\8\g_needpass\1`)
	register(t, m, "127.0.0.1:3", `\hostname\Full\mapname\dm3\clients\4\sv_maxclients\4\gamename\Nexuiz`)
	register(t, m, "10.0.0.1:4", `\hostname\Private\mapname\oa_dm1\clients\1\sv_maxclients\8`)
	r.reg, r.master = reg, m
	r.statuses, err = NewStatuses(func(ctx context.Context, addr string) (*query.Status, error) {
		r.queries.Add(1)
		return status(addr)
	}, r.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.statuses.Close)
	r.list = r.newList(t, Config{})
	return r
}

// newList returns another list of the rig's master with cfg.
func (r *rig) newList(t *testing.T, cfg Config) *List {
	t.Helper()
	cfg.Registry, cfg.Statuses, cfg.Now = r.reg, r.statuses, r.clock.Now
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func (r *rig) get(t *testing.T, from, target string, h http.Header) (*httptest.ResponseRecorder, Page) {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = from
	for k, v := range h {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	r.list.ServeHTTP(w, req)
	var p Page
	if w.Code == 200 {
		var raw struct {
			Total, Offset, Limit int
			Servers              []map[string]any
		}
		if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil {
			t.Fatalf("%s: %v: %s", target, err, w.Body)
		}
		p.Total, p.Offset, p.Limit = raw.Total, raw.Offset, raw.Limit
		for _, s := range raw.Servers {
			p.Servers = append(p.Servers, Server{Status: &query.Status{Name: s["name"].(string), Address: s["address"].(string)}, Game: s["game"].(string)})
		}
	}
	return w, p
}

func names(p Page) string {
	var out []string
	for _, s := range p.Servers {
		out = append(out, s.Status.Name)
	}
	return strings.Join(out, ",")
}

func TestFiltersSortPaging(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range []struct{ from, target, want string }{
		{"127.0.0.1:9", "/", "Empty,Full,Private,Red Arena"},
		{"203.0.113.1:9", "/", ""},
		{"10.0.0.9:9", "/", "Private"},
		{"127.0.0.1:9", "/?not_empty", "Full,Private,Red Arena"},
		{"127.0.0.1:9", "/?not_full=1&not_empty=1", "Private,Red Arena"},
		{"127.0.0.1:9", "/?no_password", "Full,Private,Red Arena"},
		{"127.0.0.1:9", "/?map=OA_DM1", "Private,Red Arena"},
		{"127.0.0.1:9", "/?game=nexuiz", "Full"},
		{"127.0.0.1:9", "/?game=Quake3Arena", "Empty,Private,Red Arena"},
		{"127.0.0.1:9", "/?sort=-players", "Full,Red Arena,Private,Empty"},
		{"127.0.0.1:9", "/?sort=map", "Full,Private,Red Arena,Empty"},
		{"127.0.0.1:9", "/?sort=-players&offset=1&limit=2", "Red Arena,Private"},
		{"127.0.0.1:9", "/?offset=10", ""},
	} {
		w, p := r.get(t, tc.from, tc.target, nil)
		if w.Code != 200 || names(p) != tc.want {
			t.Errorf("%s from %s: %d %q, want %q", tc.target, tc.from, w.Code, names(p), tc.want)
		}
	}
	_, p := r.get(t, "127.0.0.1:9", "/?sort=-players&offset=1&limit=2", nil)
	if p.Total != 4 || p.Offset != 1 || p.Limit != 2 {
		t.Errorf("paging: total %d offset %d limit %d", p.Total, p.Offset, p.Limit)
	}
	for _, bad := range []string{"/?limit=0", "/?limit=5000", "/?offset=-1", "/?sort=size", "/?not_empty=maybe"} {
		if w, _ := r.get(t, "127.0.0.1:9", bad, nil); w.Code != 400 {
			t.Errorf("%s: %d, want 400", bad, w.Code)
		}
	}
}

func TestShapeAndETag(t *testing.T) {
	live := map[string]*query.Status{"127.0.0.1:1": {Name: "Live Arena", Map: "oa_dm1", NumPlayers: 3, MaxPlayers: 8,
		Players: []query.Player{}, Bots: []query.Player{{Name: "Sarge"}}, Protocol: "quake3", Address: "127.0.0.1:1", Connect: "127.0.0.1:1"}}
	r := newRig(t, live)
	w, _ := r.get(t, "127.0.0.1:9", "/?game=Quake3Arena&map=oa_dm1", nil)
	var body struct{ Servers []map[string]any }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	// Before the queries answer: what the infoResponse said, in the
	// result shape.
	want := []string{"name", "map", "password", "numplayers", "maxplayers", "players", "bots", "connect", "queryPort", "ping", "version", "raw", "protocol", "address", "game"}
	for _, k := range want {
		if _, ok := body.Servers[0][k]; !ok {
			t.Fatalf("no %q in %v", k, body.Servers[0])
		}
	}
	// No round trip is known before an answer (-1); a live status's 0 is
	// a round trip under a millisecond.
	for _, s := range body.Servers {
		if want := map[bool]float64{true: 0, false: UnknownPing}[s["name"] == "Live Arena"]; s["ping"] != want {
			t.Errorf("%v: ping %v, want %v", s["name"], s["ping"], want)
		}
	}
	// Every server (four are visible from loopback) is queried once; the
	// queries run in the background, so wait for all of them.
	testutil.WaitFor(t, "the live status, and a query of every server", func() bool {
		_, p := r.get(t, "127.0.0.1:9", "/?game=Quake3Arena", nil)
		return strings.Contains(names(p), "Live Arena") && r.queries.Load() == 4
	})
	w, _ = r.get(t, "127.0.0.1:9", "/", nil)
	etag := w.Header().Get("ETag")
	if !strings.Contains(w.Body.String(), `"bots":[{"name":"Sarge"`) || etag == "" {
		t.Fatalf("live status not listed, or no ETag (%q): %s", etag, w.Body)
	}
	if w, _ := r.get(t, "127.0.0.1:9", "/", http.Header{"If-None-Match": {etag}}); w.Code != 304 || w.Body.Len() != 0 {
		t.Fatalf("If-None-Match: %d %q, want 304", w.Code, w.Body)
	}
	if w, _ := r.get(t, "127.0.0.1:9", "/?not_empty", http.Header{"If-None-Match": {etag}}); w.Code != 200 {
		t.Fatalf("another page with the same ETag: %d, want 200", w.Code)
	}
	// Within the TTL the statuses come from the cache.
	for range 5 {
		r.get(t, "127.0.0.1:9", "/", nil)
	}
	if got := r.queries.Load(); got != 4 {
		t.Fatalf("%d queries in all, want one per server (4) within the TTL", got)
	}
	// Past the TTL and its stale time, each server is queried again.
	r.clock.Advance(3 * DefaultTTL)
	testutil.WaitFor(t, "a second query of every server", func() bool {
		r.get(t, "127.0.0.1:9", "/", nil)
		return r.queries.Load() == 8
	})
}

func TestMethods(t *testing.T) {
	r := newRig(t, nil)
	w := httptest.NewRecorder()
	r.list.ServeHTTP(w, httptest.NewRequest("POST", "/", nil))
	if w.Code != 405 {
		t.Fatalf("POST: %d, want 405", w.Code)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{TTL: -1}, {TTL: duration.Duration(48 * time.Hour)}, {QueryTimeout: duration.Duration(time.Hour)}, {MaxQueries: -1}, {MaxQueries: 5000},
		{Sizes: Sizes{MaxStatusSize: 100}}, {Sizes: Sizes{MaxStatusSize: 2 << 20}}, {Sizes: Sizes{MaxPageSize: 1024}}, {Sizes: Sizes{MaxPageSize: 1 << 30}},
		{Sizes: Sizes{MaxStatusSize: 64 << 10, MaxPageSize: 32 << 10}}, {Sizes: Sizes{MaxStatusSize: 1 << 20, MaxPageSize: 512 << 10}},
		{Sizes: Sizes{MaxStatusSize: 64 << 10, MaxPageSize: 64 << 10}}, {Sizes: Sizes{MaxStatusSize: 1 << 20}}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (Config{Sizes: Sizes{MaxStatusSize: 64 << 10, MaxPageSize: 65 << 10}}).Validate(); err != nil {
		t.Errorf("a page of a status and 1KiB refused: %v", err)
	}
	if got, want := (Source{}).WithDefaults(), (Source{master.DefaultName, query.DefaultName}); got != want {
		t.Errorf("source %+v by default, want %+v", got, want)
	}
	if got, want := (Source{Master: "m", GameQuery: "g"}).WithDefaults(), (Source{"m", "g"}); got != want {
		t.Errorf("source %+v given m and g, want %+v", got, want)
	}
}

// The names of the source are those of a master and of game_query
// handlers, held to their rules: a name no master or game_query handler
// can have would list nothing from it, silently.
func TestSourceNamesChecked(t *testing.T) {
	for _, tc := range []struct {
		source Source
		want   string // "" accepted
	}{
		{Source{Master: "public servers", GameQuery: "eu-west"}, ""},
		{Source{Master: strings.Repeat("m", master.MaxNameLen+1)}, "master: name of 65 bytes"},
		{Source{Master: "a\x01"}, "master: name"},
		{Source{GameQuery: "eu west"}, "game_query: name"},
		{Source{GameQuery: strings.Repeat("g", query.MaxName+1)}, "game_query: name"},
	} {
		err := (Config{Source: tc.source}).Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want %q", tc.source, err, tc.want)
		}
	}
}

// fakeProtocol answers every status with its address's entry.
type fakeProtocol struct {
	live    map[string]*query.Status
	queries atomic.Int32
}

func (*fakeProtocol) Name() string { return "fake" }
func (p *fakeProtocol) Status(_ context.Context, addr string) (*query.Status, error) {
	p.queries.Add(1)
	if st, ok := p.live[addr]; ok {
		return st, nil
	}
	return nil, fmt.Errorf("no answer")
}
func (*fakeProtocol) Command(context.Context, string, string, []string) (any, error) {
	return nil, query.Errorf(http.StatusNotFound, "no commands")
}

// The servers a game query gateway is configured with are listed beside
// the master's, each once (one both registered and configured is listed
// with the gateway's status and the game it registered), with its region,
// under the same visibility rule for IP addresses, and filtered by
// region; their statuses come from the gateway's cache: a GET through the
// gateway afterwards queries nothing more.
func TestGatewayServersListed(t *testing.T) {
	r := newRig(t, nil)
	p := &fakeProtocol{live: map[string]*query.Status{
		"127.0.0.1:1":     {Name: "Alpha Live", NumPlayers: 5, MaxPlayers: 8, Raw: map[string]any{}},
		"127.0.0.1:50":    {Name: "Beta", NumPlayers: 1, MaxPlayers: 8, Raw: map[string]any{"gamename": "Xonotic"}},
		"host.test:27960": {Name: "Gamma", NumPlayers: 0, MaxPlayers: 8, Raw: map[string]any{}},
		"10.0.0.2:5":      {Name: "Delta", NumPlayers: 2, MaxPlayers: 8, Raw: map[string]any{}},
	}}
	gw, err := query.NewGateway(query.Config{Now: r.clock.Now, Servers: map[string]query.Server{
		"alpha": {Name: "alpha", Address: "127.0.0.1:1", Protocol: p},
		"beta":  {Name: "beta", Address: "127.0.0.1:50", Protocol: p, Region: "eu-west"},
		"gamma": {Name: "gamma", Address: "host.test:27960", Protocol: p, Region: "us-east"},
		"delta": {Name: "delta", Address: "10.0.0.2:5", Protocol: p, Region: "us-east"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	r.list = r.newList(t, Config{Gateways: func() []*query.Gateway { return []*query.Gateway{gw} },
		LookupHost: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
		}})
	// Until they answer: their names and addresses.
	if _, pg := r.get(t, "127.0.0.1:9", "/?region=us-east", nil); names(pg) != "delta,gamma" {
		t.Fatalf("before any answer: %q, want delta,gamma", names(pg))
	}
	testutil.WaitFor(t, "every configured server's status", func() bool {
		_, pg := r.get(t, "127.0.0.1:9", "/", nil)
		return names(pg) == "Alpha Live,Beta,Delta,Empty,Full,Gamma,Private"
	})
	for _, tc := range []struct{ from, target, want string }{
		{"127.0.0.1:9", "/?region=EU-West", "Beta"},
		{"127.0.0.1:9", "/?region=us-east&sort=-players", "Delta,Gamma"},
		{"127.0.0.1:9", "/?game=Xonotic", "Beta"},
		{"127.0.0.1:9", "/?game=Quake3Arena&not_empty", "Alpha Live,Private"},
		{"203.0.113.1:9", "/", "Gamma"},
		{"10.0.0.9:9", "/?region=us-east", "Delta,Gamma"},
	} {
		if w, pg := r.get(t, tc.from, tc.target, nil); w.Code != 200 || names(pg) != tc.want {
			t.Errorf("%s from %s: %d %q, want %q", tc.target, tc.from, w.Code, names(pg), tc.want)
		}
	}
	w, _ := r.get(t, "127.0.0.1:9", "/?region=eu-west", nil)
	if !strings.Contains(w.Body.String(), `"game":"Xonotic","region":"eu-west"`) {
		t.Fatalf("no game and region in %s", w.Body)
	}
	// The master's own query of 127.0.0.1:1 is not made: the gateway's
	// status stands for it.
	if got := p.queries.Load(); got != 4 {
		t.Fatalf("%d gateway queries, want 4", got)
	}
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, httptest.NewRequest("GET", "/beta", nil), "/beta")
	if rec.Code != 200 || rec.Header().Get("X-Gamegate-Cache") != "hit" || p.queries.Load() != 4 {
		t.Fatalf("GET /beta through the gateway: %d, cache %q, %d queries; want a hit of the list's query", rec.Code, rec.Header().Get("X-Gamegate-Cache"), p.queries.Load())
	}
}

// A gateway's server named by a host name is shown to a client only if
// every address the name resolves to may be: one resolving to a private
// address (among public ones) is not shown to a public client, localhost
// is shown to loopback clients only, and a name that does not resolve is
// taken for loopback.
func TestHostNameServersVisibility(t *testing.T) {
	r := newRig(t, nil)
	p := &fakeProtocol{live: map[string]*query.Status{}}
	gw, err := query.NewGateway(query.Config{Now: r.clock.Now, Servers: map[string]query.Server{
		"pub":   {Name: "pub", Address: "play.example.com:27960", Protocol: p},
		"db":    {Name: "db", Address: "db.internal.example:27960", Protocol: p},
		"lan":   {Name: "lan", Address: "lan.example:27960", Protocol: p},
		"local": {Name: "local", Address: "localhost:27960", Protocol: p},
		"gone":  {Name: "gone", Address: "gone.example:27960", Protocol: p},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	var lookups atomic.Int32
	release := make(chan struct{})
	resolved := map[string][]netip.Addr{
		"play.example.com":    {netip.MustParseAddr("203.0.113.7")},
		"db.internal.example": {netip.MustParseAddr("203.0.113.8"), netip.MustParseAddr("127.0.0.1")},
		"lan.example":         {netip.MustParseAddr("192.168.1.5")},
	}
	r.list = r.newList(t, Config{Gateways: func() []*query.Gateway { return []*query.Gateway{gw} },
		LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
			<-release
			lookups.Add(1)
			if a, ok := resolved[host]; ok {
				return a, nil
			}
			return nil, fmt.Errorf("no such host")
		}})
	// Before any lookup answered, nothing named by a host name is public.
	if _, pg := r.get(t, "8.8.8.8:9", "/", nil); names(pg) != "" {
		t.Fatalf("public client before lookups: %q, want none", names(pg))
	}
	// No status query runs (a public client is shown none of these
	// servers yet): the answer held now is changed by the lookups' ends
	// alone.
	testutil.WaitFor(t, "the status queries", func() bool {
		for _, name := range []string{"pub", "db", "lan", "local", "gone"} {
			if _, _, _, loading := gw.CachedStatus(name); loading {
				return false
			}
		}
		for _, a := range []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "10.0.0.1:4"} {
			if _, _, loading := r.statuses.cache.Peek(netip.MustParseAddrPort(a), r.list.policy); loading {
				return false
			}
		}
		return true
	})
	if _, pg := r.get(t, "8.8.8.8:9", "/", nil); names(pg) != "" {
		t.Fatalf("public client before lookups: %q, want none", names(pg))
	}
	close(release)
	testutil.WaitFor(t, "the lookups", func() bool {
		r.list.hostsMu.Lock()
		defer r.list.hostsMu.Unlock()
		ended := 0
		for _, h := range r.list.hosts {
			if !h.resolving && !h.expires.IsZero() {
				ended++
			}
		}
		return ended == 4
	})
	// The first answer after them shows what they found.
	if _, pg := r.get(t, "8.8.8.8:9", "/", nil); names(pg) != "pub" {
		t.Fatalf("public client after the lookups: %q, want pub", names(pg))
	}
	for _, tc := range []struct{ from, want string }{
		{"8.8.8.8:9", "pub"},
		{"10.0.0.9:9", "lan,Private,pub"},
		{"127.0.0.1:9", "db,Empty,Full,gone,lan,local,Private,pub,Red Arena"},
	} {
		w, pg := r.get(t, tc.from, "/", nil)
		if w.Code != 200 || names(pg) != tc.want {
			t.Errorf("from %s: %d %q, want %q", tc.from, w.Code, names(pg), tc.want)
		}
		if tc.from == "8.8.8.8:9" && (strings.Contains(w.Body.String(), "localhost") || strings.Contains(w.Body.String(), "internal")) {
			t.Errorf("public client shown %s", w.Body)
		}
	}
}

// Two lists of one master (server_list's and server_browser's) with
// different TTLs share its statuses: each server is queried once.
func TestListsShareStatuses(t *testing.T) {
	live := map[string]*query.Status{"127.0.0.1:1": {Name: "Live", Raw: map[string]any{}}}
	r := newRig(t, live)
	other := r.newList(t, Config{TTL: duration.Duration(time.Hour)})
	testutil.WaitFor(t, "both lists to show the live status", func() bool {
		a := r.list.Servers(netip.IPv6Loopback())
		b := other.Servers(netip.IPv6Loopback())
		has := func(s []Server) bool {
			for _, x := range s {
				if x.Status.Name == "Live" {
					return true
				}
			}
			return false
		}
		return has(a) && has(b) && r.queries.Load() == 4
	})
	for range 5 {
		r.list.Servers(netip.IPv6Loopback())
		other.Servers(netip.IPv6Loopback())
	}
	if got := r.queries.Load(); got != 4 {
		t.Fatalf("%d queries for 4 servers shown by two lists, want 4", got)
	}
}

// A request whose servers' statuses are cached reuses their encodings:
// the body is what encoding the page would give, and a repeated request
// allocates a bounded amount, not an encoding of every status.
func TestCachedEncodings(t *testing.T) {
	live := map[string]*query.Status{}
	for _, a := range []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "10.0.0.1:4"} {
		st := &query.Status{Name: "Live " + a, Map: "oa_dm1", NumPlayers: 3, MaxPlayers: 8, Protocol: "quake3",
			Players: []query.Player{}, Bots: []query.Player{{Name: "Sarge"}}, Raw: map[string]any{}}
		for i := range 40 {
			st.Raw[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("<value %d & more>", i)
		}
		st.SetAddress(a, 0)
		live[a] = st
	}
	r := newRig(t, live)
	testutil.WaitFor(t, "every live status", func() bool {
		_, p := r.get(t, "127.0.0.1:9", "/", nil)
		return strings.Count(names(p), "Live") == 4
	})
	client := netip.MustParseAddr("127.0.0.1")
	want, err := json.Marshal(defaultFilter(t).Apply(r.list.Servers(client)))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := r.get(t, "127.0.0.1:9", "/", nil)
	if w.Body.String() != string(want) {
		t.Fatalf("body\n%s\nwant\n%s", w.Body, want)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "127.0.0.1:9"
	allocs := testing.AllocsPerRun(20, func() { r.list.ServeHTTP(httptest.NewRecorder(), req) })
	if allocs > 200 {
		t.Fatalf("%.0f allocations per request of 4 cached statuses, want at most 200", allocs)
	}
	t.Logf("%.0f allocations per request", allocs)
}

func defaultFilter(t *testing.T) Filter {
	t.Helper()
	f, bad := ParseFilter(map[string][]string{})
	if bad != "" {
		t.Fatal(bad)
	}
	return f
}

// A failed lookup of a host-named server keeps the addresses it last had:
// one DNS failure does not hide a public server from public clients for a
// whole ttl.
func TestHostNameKeepsItsAddressesThroughAFailedLookup(t *testing.T) {
	r := newRig(t, nil)
	p := &fakeProtocol{live: map[string]*query.Status{}}
	gw, err := query.NewGateway(query.Config{Now: r.clock.Now, Servers: map[string]query.Server{
		"pub": {Name: "pub", Address: "play.example.com:27960", Protocol: p},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	var fail atomic.Bool
	var lookups atomic.Int32
	r.list = r.newList(t, Config{Gateways: func() []*query.Gateway { return []*query.Gateway{gw} },
		LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
			lookups.Add(1)
			if fail.Load() {
				return nil, fmt.Errorf("SERVFAIL")
			}
			return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
		}})
	testutil.WaitFor(t, "first lookup", func() bool {
		_, pg := r.get(t, "8.8.8.8:9", "/", nil)
		return names(pg) == "pub"
	})
	fail.Store(true)
	r.clock.Advance(DefaultTTL + time.Second)
	n := lookups.Load()
	r.get(t, "8.8.8.8:9", "/", nil) // starts the re-resolution
	testutil.WaitFor(t, "second lookup", func() bool { return lookups.Load() > n })
	testutil.WaitFor(t, "the failed lookup to be recorded", func() bool {
		r.list.hostsMu.Lock()
		defer r.list.hostsMu.Unlock()
		for _, h := range r.list.hosts {
			if h.resolving {
				return false
			}
		}
		return true
	})
	_, pg := r.get(t, "8.8.8.8:9", "/", nil)
	if names(pg) != "pub" {
		t.Fatalf("after a failed lookup a public client sees %q, want the public server", names(pg))
	}
}
