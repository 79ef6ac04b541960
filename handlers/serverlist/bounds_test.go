package serverlist

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// hostileStatus is the status a hostile Quake 3 server may answer within
// the protocol's limits: 1,024 variables and 256 players, about 50 KB on
// the wire.
func hostileStatus(addr string) *query.Status {
	st := &query.Status{Name: strings.Repeat("<b>", 300), Map: "oa_dm1", NumPlayers: 256, MaxPlayers: 256,
		Protocol: "quake3", Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{}}
	for i := range 1024 {
		st.Raw[fmt.Sprintf("var%04d", i)] = strings.Repeat("x", 32)
	}
	for i := range 256 {
		st.Players = append(st.Players, query.Player{Name: fmt.Sprintf("player %03d %s", i, strings.Repeat("y", 24)),
			Raw: map[string]any{"frags": float64(i), "ping": float64(50)}})
	}
	st.SetAddress(addr, 0)
	return st
}

// liveCount is the number of servers l lists with a hostileStatus.
func liveCount(l *List) int {
	n := 0
	for _, s := range l.Servers(netip.IPv6Loopback()) {
		if s.Status.NumPlayers == 256 {
			n++
		}
	}
	return n
}

// Servers that register and expire, round after round, leave nothing in
// the statuses: what the list holds is bounded by what is listed, not by
// every server that ever registered, and the heap with it.
func TestStatusesForgetServersThatLeave(t *testing.T) {
	hostile := hostileStatus("127.0.0.1:1") // one answer for all: what each keeps is its own
	r := newQueryRig(t, func(string) (*query.Status, error) { return hostile, nil })
	const perRound, rounds = 200, 4
	heap := func() uint64 {
		runtime.GC() // twice: pooled buffers go at the second
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// The rig's four servers expire first.
	r.clock.Advance(master.DefaultExpiry + time.Second)
	r.list.Servers(netip.IPv6Loopback())
	before := heap()
	for round := range rounds {
		for i := range perRound {
			register(t, r.master, fmt.Sprintf("127.%d.%d.%d:27960", round+1, i/100, i%100+1), `\hostname\Round\mapname\oa_dm1\clients\0\sv_maxclients\8`)
		}
		testutil.WaitForWithin(t, time.Minute, "every server's status", func() bool { return liveCount(r.list) == perRound })
		if got := r.statuses.Len(); got != perRound {
			t.Fatalf("round %d: %d statuses held for %d servers listed", round, got, perRound)
		}
		// Each held is cut and kept as its encoding: about
		// max_status_size of heap, not the 200 KB of a whole hostile
		// status.
		if per := (int64(heap()) - int64(before)) / perRound; per > 2*DefaultMaxStatusSize {
			t.Fatalf("round %d: %d bytes of heap per status held, want at most %d", round, per, 2*DefaultMaxStatusSize)
		} else {
			t.Logf("round %d: %d bytes of heap per status held", round, per)
		}
		r.clock.Advance(master.DefaultExpiry + time.Second)
		if got := len(r.list.Servers(netip.IPv6Loopback())); got != 0 {
			t.Fatalf("round %d: %d servers listed after they expired", round, got)
		}
		if got := r.statuses.Len(); got != 0 {
			t.Fatalf("round %d: %d statuses held after every server left, want 0", round, got)
		}
	}
	// Kept, the statuses would be about 400 of about 60 KB of heap.
	if grew := int64(heap()) - int64(before); grew > 4<<20 {
		t.Fatalf("heap grew %d bytes over %d rounds of %d servers that left", grew, rounds, perRound)
	}
}

// A list nobody reads forgets the statuses of the servers that left too.
func TestStatusesForgottenWithoutRequests(t *testing.T) {
	live := map[string]*query.Status{"127.0.0.1:1": {Name: "Live", Raw: map[string]any{}}}
	r := newRig(t, live)
	r.list = r.newList(t, Config{TTL: duration.Duration(time.Second)})
	testutil.WaitFor(t, "the statuses of the rig's servers", func() bool {
		r.list.Servers(netip.IPv6Loopback())
		return r.statuses.Len() == 4 && r.queries.Load() == 4
	})
	r.clock.Advance(master.DefaultExpiry + time.Second)
	testutil.WaitFor(t, "the statuses forgotten", func() bool { return r.statuses.Len() == 0 })
}

// A hostile server's status is kept and listed cut to max_status_size,
// marked truncated, its counts as it said.
func TestHostileStatusCut(t *testing.T) {
	r := newQueryRig(t, func(addr string) (*query.Status, error) { return hostileStatus(addr), nil })
	r.list = r.newList(t, Config{Sizes: Sizes{MaxStatusSize: 4 << 10}})
	testutil.WaitFor(t, "the statuses", func() bool { return liveCount(r.list) == 4 })
	w, _ := r.get(t, "127.0.0.1:9", "/", nil)
	var body struct{ Servers []json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	for _, e := range body.Servers {
		var s struct {
			NumPlayers int            `json:"numplayers"`
			Players    []any          `json:"players"`
			Raw        map[string]any `json:"raw"`
			Truncated  bool           `json:"truncated"`
		}
		if err := json.Unmarshal(e, &s); err != nil {
			t.Fatal(err)
		}
		if len(e) > 4<<10 || !s.Truncated || s.NumPlayers != 256 || len(s.Players) == 0 || len(s.Players) == 256 {
			t.Fatalf("entry of %d bytes (want at most 4096), truncated %v, %d players of %d, %d variables",
				len(e), s.Truncated, len(s.Players), s.NumPlayers, len(s.Raw))
		}
	}
	// What the statuses keep is cut too, to the list's max_status_size.
	k, _, ok := r.statuses.get(netip.MustParseAddrPort("127.0.0.1:1"), r.list.policy, r.list.load(netip.MustParseAddrPort("127.0.0.1:1")), true)
	if !ok || !k.truncated || len(k.json) > 4<<10 || len(k.st.Players)+len(k.st.Raw) != 0 {
		t.Fatalf("kept status: %v, truncated %v, %d bytes, a summary of %d players and %d variables", ok, k.truncated, len(k.json), len(k.st.Players), len(k.st.Raw))
	}
}

func TestCutStatus(t *testing.T) {
	small := &query.Status{Name: "Arena", Raw: map[string]any{"a": "b"}}
	if got, cut := CutStatus(small, MinMaxStatusSize); got != small || cut {
		t.Fatalf("a small status was cut")
	}
	texts := &query.Status{Name: strings.Repeat("<", 5000), Map: strings.Repeat("\x01", 5000), Version: strings.Repeat("é", 5000),
		Connect: strings.Repeat("\"", 5000), Address: "\xff" + strings.Repeat("a", 5000), Protocol: strings.Repeat("\u2028", 5000)}
	for _, tc := range []struct {
		name string
		st   *query.Status
	}{{"hostile", hostileStatus("127.0.0.1:1")}, {"texts", texts}} {
		for _, size := range []int{MinMaxStatusSize, 3000, DefaultMaxStatusSize, 40000} {
			got, cut := CutStatus(tc.st, size)
			b, err := json.Marshal(got)
			if err != nil || !cut || len(b) > size {
				t.Errorf("%s cut to %d: %d bytes, cut %v, %v", tc.name, size, len(b), cut, err)
			}
			if size == 40000 && tc.name == "hostile" && (len(got.Players) < 100 || len(got.Raw) < 100) {
				t.Errorf("%s cut to %d: %d players, %d variables: room was left", tc.name, size, len(got.Players), len(got.Raw))
			}
		}
	}
	if len(hostileStatus("127.0.0.1:1").Players) != 256 {
		t.Fatal("the original changed")
	}
}

// One page's body is bounded by max_page_size: a page of large statuses
// ends early, marked truncated, and paging on from offset plus the
// servers it held lists every server once.
func TestPageBytesBounded(t *testing.T) {
	hostile := hostileStatus("127.0.0.1:1")
	r := newQueryRig(t, func(addr string) (*query.Status, error) {
		st := *hostile
		st.SetAddress(addr, 0)
		return &st, nil
	})
	const servers = 200
	for i := range servers {
		register(t, r.master, fmt.Sprintf("127.1.%d.%d:27960", i/100, i%100+1), `\hostname\Many\mapname\oa_dm1\clients\0\sv_maxclients\8`)
	}
	const pageSize = 64 << 10
	r.list = r.newList(t, Config{Sizes: Sizes{MaxPageSize: pageSize}, MaxQueries: 64})
	testutil.WaitForWithin(t, time.Minute, "every status", func() bool { return liveCount(r.list) == servers+4 })
	seen := map[string]bool{}
	pages := 0
	for offset := 0; ; pages++ {
		if pages > servers {
			t.Fatal("paging does not end")
		}
		w, p := r.get(t, "127.0.0.1:9", fmt.Sprintf("/?limit=1000&offset=%d", offset), nil)
		var page struct{ Truncated bool }
		_ = json.Unmarshal(w.Body.Bytes(), &page)
		if w.Code != 200 || w.Body.Len() > pageSize || len(p.Servers) == 0 && offset < p.Total {
			t.Fatalf("offset %d: %d, %d bytes, %d servers", offset, w.Code, w.Body.Len(), len(p.Servers))
		}
		for _, s := range p.Servers {
			if seen[s.Status.Address] {
				t.Fatalf("%s listed twice", s.Status.Address)
			}
			seen[s.Status.Address] = true
		}
		offset += len(p.Servers)
		if offset >= p.Total {
			if page.Truncated {
				t.Fatal("the last page is marked truncated")
			}
			break
		}
		if !page.Truncated {
			t.Fatalf("a page of %d servers of %d from %d is not marked truncated", len(p.Servers), p.Total, offset)
		}
	}
	if len(seen) != servers+4 || pages < 10 {
		t.Fatalf("%d servers listed in %d pages, want %d in at least 10", len(seen), pages, servers+4)
	}
}

// A status past its TTL is served while it is refreshed, however long
// the list was not read, never the heartbeat's data in its place; after
// a failed refresh too; and when no query may start (max_queries are
// running), still the stale status.
func TestStaleStatusServedWhileRefreshing(t *testing.T) {
	var (
		block, fail atomic.Bool
		release     = make(chan struct{})
	)
	live := &query.Status{Name: "Live", NumPlayers: 2, Version: "ioq3 1.36", Raw: map[string]any{}}
	live.SetAddress("127.0.0.1:1", 0)
	r := newQueryRig(t, func(addr string) (*query.Status, error) {
		if block.Load() {
			<-release
		}
		if addr == "127.0.0.1:1" && !fail.Load() {
			return live, nil
		}
		return nil, fmt.Errorf("no answer")
	})
	t.Cleanup(func() { close(release) })
	r.list = r.newList(t, Config{MaxQueries: 1})
	name := func() string {
		for _, s := range r.list.Servers(netip.IPv6Loopback()) {
			if s.Status.Address == "127.0.0.1:1" {
				return s.Status.Name
			}
		}
		return ""
	}
	testutil.WaitFor(t, "the live status", func() bool { return name() == "Live" })
	before := r.queries.Load()
	for _, past := range []time.Duration{DefaultTTL + time.Second, 2 * DefaultTTL, 10 * DefaultTTL} {
		n := r.queries.Load()
		r.clock.Advance(past)
		if got := name(); got != "Live" {
			t.Fatalf("%s later: %q listed, want the stale status", past, got)
		}
		testutil.WaitFor(t, fmt.Sprintf("a refresh %s later", past), func() bool {
			res, ok, _ := r.statuses.cache.Peek(netip.MustParseAddrPort("127.0.0.1:1"), r.list.policy)
			return r.queries.Load() > n && ok && res.State == cache.Fresh && name() == "Live"
		})
	}
	if r.queries.Load() == before {
		t.Fatal("no refresh")
	}
	// Refreshes that fail (a lost datagram, a server that stopped
	// answering queries) keep the last status, and are retried.
	fail.Store(true)
	for range 3 {
		n := r.queries.Load()
		r.clock.Advance(10 * DefaultTTL)
		if got := name(); got != "Live" {
			t.Fatalf("after failed refreshes: %q listed, want the last status", got)
		}
		testutil.WaitFor(t, "a refresh that fails", func() bool { return r.queries.Load() > n })
		testutil.WaitFor(t, "its failure recorded", func() bool {
			_, _, loading := r.statuses.cache.Peek(netip.MustParseAddrPort("127.0.0.1:1"), r.list.policy)
			return !loading
		})
		if got := name(); got != "Live" {
			t.Fatalf("after a failed refresh: %q listed, want the last status", got)
		}
	}
	// Every query slot taken by a query that does not return: the stale
	// status is still listed.
	block.Store(true)
	r.clock.Advance(DefaultTTL + time.Second)
	for range 3 {
		if got := name(); got != "Live" {
			t.Fatalf("with max_queries running: %q listed, want the stale status", got)
		}
	}
}

// A server that joins the list is queried without waiting for a request:
// the first request after it shows its status, not its heartbeat's data.
// Refreshes are left to requests.
func TestJoinedServersQueriedBeforeRequests(t *testing.T) {
	live := map[string]*query.Status{}
	for _, a := range []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "10.0.0.1:4"} {
		st := &query.Status{Name: "Live " + a, NumPlayers: 2, Raw: map[string]any{}}
		st.SetAddress(a, 0)
		live[a] = st
	}
	r := newRig(t, live)
	r.list = r.newList(t, Config{TTL: duration.Duration(time.Second)})
	testutil.WaitFor(t, "the joined servers' queries", func() bool { return r.queries.Load() == 4 })
	testutil.WaitFor(t, "their statuses", func() bool { return r.statuses.Len() == 4 })
	for _, s := range r.list.Servers(netip.IPv6Loopback()) {
		if !strings.HasPrefix(s.Status.Name, "Live") {
			t.Fatalf("the first request lists %q, not its status", s.Status.Name)
		}
	}
	// Past the ttl, with no request, no refresh.
	r.clock.Advance(time.Hour)
	time.Sleep(2500 * time.Millisecond) // two ticks of the 1s schedule
	if n := r.queries.Load(); n != 4 {
		t.Fatalf("%d queries with no request, want the 4 first ones", n)
	}
}

// Whatever a server answers, a cut status encodes within the size asked.
func FuzzCutStatus(f *testing.F) {
	f.Add("Arena", "oa_dm1", "ioq3", "x", "k", uint16(10), uint8(4), uint16(MinMaxStatusSize))
	f.Add(strings.Repeat("<", 600), "\x00\xff", "\u2028", strings.Repeat("\"", 40), "\\", uint16(1024), uint8(255), uint16(3000))
	f.Fuzz(func(t *testing.T, name, mapName, version, value, key string, vars uint16, players uint8, size uint16) {
		// A status comes from an answer of at most max_response_size
		// (64KiB by default): texts of a couple of hundred bytes,
		// repeated, make statuses of up to a few hundred KiB, over every
		// limit, worth cutting; longer ones only make each run slower
		// (a run's cost is its status's size) and CI's fuzz smoke long.
		name, mapName, version = firstBytes(name, 256), firstBytes(mapName, 256), firstBytes(version, 256)
		value, key = firstBytes(value, 128), firstBytes(key, 32)
		st := &query.Status{Name: name, Map: mapName, Version: version, Address: name + ":1", Connect: mapName, Protocol: version, Raw: map[string]any{}}
		for i := range int(vars % 1024) {
			st.Raw[fmt.Sprintf("%s%d", key, i)] = value
		}
		for i := range int(players) {
			st.Players = append(st.Players, query.Player{Name: name + value, Raw: map[string]any{"frags": float64(i), "name": value}})
		}
		limit := MinMaxStatusSize + int(size)
		got, _ := CutStatus(st, limit)
		b, err := json.Marshal(got)
		if err != nil || len(b) > limit {
			t.Fatalf("cut to %d: %d bytes, %v", limit, len(b), err)
		}
	})
}

// firstBytes is s cut to at most n bytes.
func firstBytes(s string, n int) string { return s[:min(len(s), n)] }
