package qos

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/gamegate/gamegate/dgram"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// countingTables records what a Service holds.
type countingTables struct {
	ownTables
	mu    sync.Mutex
	held  map[string]int
	lists map[string]string // key → listener
}

func newCountingTables() *countingTables {
	return &countingTables{ownTables: ownTables{byKey: map[string]*ownTable{}}, held: map[string]int{}, lists: map[string]string{}}
}

func (c *countingTables) Acquire(key, listener string, limit int) (*SourceTable, error) {
	c.mu.Lock()
	c.held[key]++
	c.lists[key] = listener
	c.mu.Unlock()
	return c.ownTables.Acquire(key, listener, limit)
}

func (c *countingTables) Release(key string) error {
	c.mu.Lock()
	c.held[key]--
	c.mu.Unlock()
	return c.ownTables.Release(key)
}

// ban sends burst+1 requests from src through p and reports whether the
// last was answered with a ban.
func ban(t *testing.T, p dgram.Protocol, src netip.AddrPort, burst int) bool {
	t.Helper()
	req := request(t, "QoS request", 1, 2, 3)
	var last []dgram.Datagram
	for range burst + 1 {
		var matched bool
		last, matched = dgram.Dispatch([]dgram.Protocol{p}, src, req)
		if !matched {
			t.Fatal("a QoS request did not match")
		}
	}
	var resp wireqos.Response
	return len(last) == 1 && resp.Decode(last[0].Data) == nil && resp.Flow.IsBan()
}

// answered reports whether one request from src gets an answer.
func answered(t *testing.T, p dgram.Protocol, src netip.AddrPort) bool {
	t.Helper()
	sent, _ := dgram.Dispatch([]dgram.Protocol{p}, src, request(t, "QoS request", 9))
	return len(sent) == 1 && sent[0].To == src
}

func TestServiceTablePerListener(t *testing.T) {
	tables := newCountingTables()
	s := NewService(Config{Rate: 1, Burst: 2}, tables)
	a, err := s.ForListener("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.ForListener("127.0.0.1:2")
	again, _ := s.ForListener("127.0.0.1:1")
	if a == b || a != again {
		t.Fatal("want one server per listener, the same each time")
	}
	src := netip.MustParseAddrPort("192.0.2.1:5")
	if !ban(t, a, src, 2) {
		t.Fatal("the source was not banned past its burst")
	}
	if answered(t, a, src) {
		t.Fatal("a banned source was answered on its listener")
	}
	if !answered(t, b, src) {
		t.Fatal("a source banned on one listener was ignored on another")
	}
	if len(tables.held) != 2 || tables.lists[s.TableKey("127.0.0.1:1")] != "127.0.0.1:1" {
		t.Fatalf("tables held: got %v (listeners %v), want one per listener", tables.held, tables.lists)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for key, n := range tables.held {
		if n != 0 {
			t.Fatalf("table %s still held %d times after Close", key, n)
		}
	}
	if _, err := s.ForListener("127.0.0.1:1"); err == nil {
		t.Fatal("a closed service made a server")
	}
}

// Services of one name share one table on every listener, and a service
// that replaces another (a reload) finds its bans; each listener's
// verdicts are still counted apart.
func TestServiceNamedTable(t *testing.T) {
	tables := newCountingTables()
	counted := map[string]int{}
	old := NewService(Config{Rate: 1, Burst: 2, Name: "shared", Count: func(listener string) func(Verdict) {
		return func(Verdict) { counted[listener]++ }
	}}, tables)
	a, _ := old.ForListener("127.0.0.1:1")
	b, _ := old.ForListener("127.0.0.1:2")
	sa, _ := old.Server("127.0.0.1:1")
	sb, _ := old.Server("127.0.0.1:2")
	if sa.Engine() != sb.Engine() || len(tables.held) != 1 || tables.lists[old.TableKey("x")] != "" {
		t.Fatal("a named service: want one engine for every listener, its table for no listener")
	}
	src := netip.MustParseAddrPort("192.0.2.1:5")
	if !ban(t, a, src, 2) {
		t.Fatal("the source was not banned past its burst")
	}
	if answered(t, b, src) {
		t.Fatal("a source banned on one listener of a named service was answered on another")
	}
	if counted["127.0.0.1:1"] != 3 || counted["127.0.0.1:2"] != 1 {
		t.Fatalf("verdicts counted by listener: got %v, want 3 on :1 and 1 on :2", counted)
	}
	replacement := NewService(Config{Rate: 5, Burst: 10, Name: "shared"}, tables)
	c, _ := replacement.ForListener("127.0.0.1:3")
	_ = old.Close()
	if answered(t, c, src) {
		t.Fatal("the ban did not outlive the service that made it")
	}
	other := NewService(Config{Rate: 1, Burst: 2, Name: "shared", MaxSources: 10}, tables)
	d, _ := other.ForListener("")
	if !answered(t, d, src) {
		t.Fatal("a service of other settings shares the name's table")
	}
}

// client_ipv6_prefix: sources in one prefix share their rate and ban.
func TestServiceClientIPv6Prefix(t *testing.T) {
	first := netip.MustParseAddrPort("[2001:db8:1:2::1]:5")
	sameSlash48 := netip.MustParseAddrPort("[2001:db8:1:ffff::1]:5")
	for _, tc := range []struct {
		prefix int
		shared bool
	}{{0, false}, {64, false}, {48, true}, {128, false}} {
		s := NewService(Config{Rate: 1, Burst: 2, ClientIPv6Prefix: tc.prefix}, nil)
		p, _ := s.ForListener("l")
		if !ban(t, p, first, 2) {
			t.Fatal("the source was not banned past its burst")
		}
		if got := !answered(t, p, sameSlash48); got != tc.shared {
			t.Errorf("prefix %d: another address of the /48 banned too: got %v, want %v", tc.prefix, got, tc.shared)
		}
		_ = s.Close()
	}
}

// Match peeks; ServeDatagram drops what Match would refuse (a caddy-l4
// route hands it every datagram) and counts it.
func TestServerServesWhatMatchRefuses(t *testing.T) {
	var verdicts []Verdict
	s := NewService(Config{Count: func(string) func(Verdict) {
		return func(v Verdict) { verdicts = append(verdicts, v) }
	}}, nil)
	p, _ := s.ForListener("l")
	bad := []byte{0x58, 0, 1}
	if p.Match(bad) {
		t.Fatal("Match took a datagram with the wrong magic")
	}
	w := dgram.NewWriter(&dgram.Conn{})
	p.ServeDatagram(w, netip.MustParseAddrPort("192.0.2.1:1"), bad)
	if len(verdicts) != 1 || verdicts[0] != DroppedMagic {
		t.Fatalf("verdicts: got %v, want [magic]", verdicts)
	}
}

func TestWithDefaults(t *testing.T) {
	c := Config{BanUnits: 3, Capacity: 2.5}.WithDefaults()
	if c.Rate != DefaultRate || c.Burst != DefaultBurst || c.MaxSources != DefaultMaxSources ||
		c.SourceKey != DefaultSourceKey || c.ClientIPv6Prefix != DefaultClientIPv6Prefix {
		t.Fatalf("got %+v, want the defaults", c)
	}
	if c.BanDuration.Std() != 3*wireqos.Unit || c.CapacityBurst != 3 {
		t.Fatalf("ban_duration %s, capacity_burst %d: want 3 units and 3", c.BanDuration, c.CapacityBurst)
	}
}

// TestServeDatagramAllocatesNothing: the app's readers serve QoS without
// allocating once a source is tracked.
func TestServeDatagramAllocatesNothing(t *testing.T) {
	s := NewService(Config{Rate: 1e9, Burst: 1 << 30}, nil)
	defer s.Close()
	p, _ := s.ForListener("l")
	w := dgram.NewWriter(&dgram.Conn{}) // writes fail, without allocating
	src := netip.MustParseAddrPort("192.0.2.1:1")
	req := request(t, "QoS request", make([]byte, 11)...)
	p.ServeDatagram(w, src, req)
	w.Flush()
	if allocs := testing.AllocsPerRun(1000, func() {
		p.ServeDatagram(w, src, req)
		w.Flush()
	}); allocs != 0 {
		t.Fatalf("got %v allocations per datagram, want 0", allocs)
	}
}
