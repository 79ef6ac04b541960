package relay

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// checkLinks asserts the table's invariants: the live count matches the
// bindings held, and every link between two live bindings is recorded on
// both sides pointing at the other.
func checkLinks(t *testing.T, tab *Table) {
	t.Helper()
	all := map[wirerelay.AllocationID]*Binding{}
	for i := range tab.shards {
		s := &tab.shards[i]
		s.mu.RLock()
		for id, b := range s.byID {
			if tab.shardOf(id) != s {
				t.Errorf("binding %v in shard %d, not its own", id, i)
			}
			all[id] = b
		}
		if len(s.gone) > tab.goneLimit {
			t.Errorf("shard %d remembers %d ended bindings, bound %d", i, len(s.gone), tab.goneLimit)
		}
		s.mu.RUnlock()
	}
	if got := tab.Len(); got != len(all) {
		t.Errorf("Len() = %d, but the shards hold %d bindings", got, len(all))
	}
	if len(all) > tab.Limit() {
		t.Errorf("%d bindings, limit %d", len(all), tab.Limit())
	}
	for id, b := range all {
		for p, link := range b.peers {
			o := all[p]
			if o == nil || o != link {
				t.Errorf("%v links to a binding of %v that is not live", id, p)
				continue
			}
			if o.peers[id] != b {
				t.Errorf("%v links to %v, but not the other way", id, p)
			}
		}
	}
}

// Many clients binding, connecting, relaying, disconnecting and closing at
// once, while time passes and the sweeper ends idle bindings, leave the
// table consistent. Run with -race, this is also the sharding's lock test;
// a lock-order mistake deadlocks it, and the test's timeout reports that.
func TestTableConcurrentUse(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	sealer, err := NewSealer([]byte("0123456789abcdef-test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	const limit = 48
	tab := mustTable(t, TableConfig{Limit: limit, Clock: clock.Now, IdleTimeout: 3 * time.Second, AloneTimeout: 5 * time.Second})
	e, err := NewEngine(Config{Sealer: sealer}, tab)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: clock, sealer: sealer, engine: e}
	const workers, rounds = 8, 400
	clients := make([]*client, 64)
	for i := range clients {
		clients[i] = r.newClient(fmt.Sprintf("10.0.%d.%d:%d", i/250, i%250+1, 1000+i), 1+i%4)
	}
	var verdicts [NumVerdicts]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := NewOutbox()
			for n := range rounds {
				k := n / 6 // one pair of clients for each round of six messages
				c := clients[(w*7+k*13)%len(clients)]
				h := clients[(w*3+k*5+1)%len(clients)]
				req, _ := (&wirerelay.ConnectRequest{AllocationID: c.alloc.ID, ToConnectionData: h.data}).AppendShipped(nil)
				rel, _ := (&wirerelay.Relay{From: c.alloc.ID, To: h.alloc.ID, Content: []byte("x")}).AppendTo(nil)
				dis, _ := (&wirerelay.Disconnect{From: c.alloc.ID, To: h.alloc.ID}).AppendTo(nil)
				cl, _ := (&wirerelay.Close{AllocationID: c.alloc.ID}).AppendTo(nil)
				var d []byte
				switch n % 6 {
				case 0:
					d = c.bindMsg(t, uint16(n))
				case 1:
					d = h.bindMsg(t, uint16(n))
				case 2:
					d = req
				case 3:
					d = rel
				case 4:
					d = dis
					if k%2 == 0 {
						d = rel
					}
				default:
					d = rel
					if k%5 == 0 {
						d = cl
					}
				}
				from := c.peer
				if n%6 == 1 {
					from = h.peer
				}
				verdicts[e.Handle(from, d, out)].Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			clock.Advance(50 * time.Millisecond)
			tab.Sweep()
		}
	}()
	wg.Wait()
	for _, v := range []Verdict{Bound, Accepted, Relayed, Disconnected, Closed} {
		if verdicts[v].Load() == 0 {
			t.Errorf("no message was %v: the test did not exercise it", v)
		}
	}
	checkLinks(t, tab)
	clock.Advance(time.Minute)
	if n := tab.Sweep(); n == 0 && tab.Len() != 0 {
		t.Fatalf("sweep ended nothing, %d bindings left", tab.Len())
	}
	if tab.Len() != 0 {
		t.Fatalf("%d bindings outlived every timeout", tab.Len())
	}
	checkLinks(t, tab)
}

// A link to a binding that ended is not a link to a later binding of the
// same allocation: the rebound host must be connected to again.
func TestLinkDoesNotOutliveBinding(t *testing.T) {
	r := newRig(t, 10)
	host, joiner := connectPair(r, 2)
	// The host closes and binds again: a new binding, with no peers.
	cl := encode(t, &wirerelay.Close{AllocationID: host.alloc.ID})
	r.handle(host.peer, cl)
	host.nonce++
	r.bind(host)
	msg := encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: []byte("x")})
	_, sends := r.handle(joiner.peer, msg)
	wantError(t, sends, joiner.peer, joiner.alloc.ID, wirerelay.CodeNotConnected)
	checkLinks(t, r.engine.Table())
}

func TestNewTableRefusesBadSettings(t *testing.T) {
	for _, cfg := range []TableConfig{{Limit: -1}, {IdleTimeout: -time.Second}, {AloneTimeout: -time.Second}} {
		if _, err := NewTable(cfg); err == nil {
			t.Errorf("NewTable(%+v): got no error", cfg)
		}
	}
}

// Two clients in different shards connecting and disconnecting in opposite
// directions at once: lockSender must take the two shard locks in one order,
// or this deadlocks (and the test binary's timeout reports it).
func TestLockPairOrder(t *testing.T) {
	r := newRig(t, 100)
	var a, b *client
	for i := 0; b == nil; i++ {
		c := r.newClient(fmt.Sprintf("10.1.0.%d:1", i+1), 4)
		r.bind(c)
		switch {
		case a == nil:
			a = c
		case r.engine.Table().shardIndex(c.alloc.ID) != r.engine.Table().shardIndex(a.alloc.ID):
			b = c
		}
	}
	e := r.engine
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, pair := range [][2]*client{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		req, _ := (&wirerelay.ConnectRequest{AllocationID: from.alloc.ID, ToConnectionData: to.data}).AppendShipped(nil)
		dis, _ := (&wirerelay.Disconnect{From: from.alloc.ID, To: to.alloc.ID}).AppendTo(nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := NewOutbox()
			<-start
			for range 200000 {
				e.Handle(from.peer, req, out)
				e.Handle(from.peer, dis, out)
			}
		}()
	}
	close(start)
	wg.Wait()
	checkLinks(t, r.engine.Table())
}

// CONNECT and DISCONNECT take their two shard locks without allocating,
// whether the two allocations share a shard or not.
func TestConnectDisconnectAllocateNothing(t *testing.T) {
	r := newRig(t, 200)
	tab := r.engine.Table()
	a := r.newClient("10.2.0.1:1", 4)
	r.bind(a)
	var same, other *client
	for i := 2; same == nil || other == nil; i++ {
		c := r.newClient(fmt.Sprintf("10.2.%d.%d:1", i/250, i%250+1), 4)
		switch {
		case tab.shardIndex(c.alloc.ID) == tab.shardIndex(a.alloc.ID) && same == nil:
			same = c
		case tab.shardIndex(c.alloc.ID) != tab.shardIndex(a.alloc.ID) && other == nil:
			other = c
		default:
			continue
		}
		r.bind(c)
	}
	for _, b := range []*client{same, other} {
		allocs := testing.AllocsPerRun(1000, func() {
			if v, code := tab.connect(a.alloc.ID, a.peer.AddrPort, b.alloc.ID); v != Accepted || code != 0 {
				panic(fmt.Sprintf("connect: %v %v", v, code))
			}
			if _, code := tab.disconnect(a.alloc.ID, a.peer.AddrPort, b.alloc.ID); code != 0 {
				panic(fmt.Sprintf("disconnect: %v", code))
			}
		})
		if allocs != 0 {
			t.Errorf("same shard %v: got %v allocations per CONNECT and DISCONNECT, want 0",
				tab.shardIndex(b.alloc.ID) == tab.shardIndex(a.alloc.ID), allocs)
		}
	}
}
