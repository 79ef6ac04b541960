package relay

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

type rig struct {
	t      testing.TB
	clock  *testutil.Clock
	sealer *Sealer
	engine *Engine
	out    *Outbox
}

func newRig(t testing.TB, limit int) *rig {
	t.Helper()
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	sealer, err := NewSealer([]byte("0123456789abcdef-test-secret"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(Config{Sealer: sealer}, mustTable(t, TableConfig{Limit: limit, Clock: clock.Now}))
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, clock: clock, sealer: sealer, engine: e, out: NewOutbox()}
}

// client is one allocation and the address it sends from.
type client struct {
	alloc *Allocation
	data  []byte // its connection data
	peer  Peer
	nonce uint16
}

func (r *rig) newClient(addr string, maxConn int) *client {
	r.t.Helper()
	a, err := NewAllocation(maxConn, "test", r.clock.Now().Add(time.Hour))
	if err != nil {
		r.t.Fatal(err)
	}
	data, err := r.sealer.Seal(a)
	if err != nil {
		r.t.Fatal(err)
	}
	return &client{alloc: a, data: data, peer: peerAt(addr)}
}

func peerAt(addr string) Peer {
	ap := netip.MustParseAddrPort(addr)
	return Peer{AddrPort: ap}
}

// bindMsg is the 295-byte BIND the shipped client sends.
func (c *client) bindMsg(t testing.TB, nonce uint16) []byte {
	t.Helper()
	m := wirerelay.Bind{Nonce: nonce, ConnectionData: c.data}
	if err := m.Sign(c.alloc.Key[:], wirerelay.Options{Padded: true}); err != nil {
		t.Fatal(err)
	}
	b, err := m.AppendShipped(nil)
	if err != nil || len(b) != wirerelay.ShippedBindLen {
		t.Fatalf("BIND of %d bytes (%v), want 295", len(b), err)
	}
	return b
}

func encode(t *testing.T, m wirerelay.Message) []byte {
	t.Helper()
	b, err := m.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handle runs one datagram and returns the verdict and sends.
func (r *rig) handle(from Peer, datagram []byte) (Verdict, []Send) {
	v := r.engine.Handle(from, datagram, r.out)
	sends := make([]Send, len(r.out.Sends))
	for i, s := range r.out.Sends {
		sends[i] = Send{To: s.To, Data: bytes.Clone(s.Data)}
	}
	return v, sends
}

func (r *rig) bind(c *client) {
	r.t.Helper()
	v, sends := r.handle(c.peer, c.bindMsg(r.t, c.nonce))
	if v != Bound || len(sends) != 1 || !bytes.Equal(sends[0].Data, []byte{0xDA, 0x72, 0, 1}) || sends[0].To != c.peer.AddrPort {
		r.t.Fatalf("BIND: got %v %v, want BIND_RECEIVED to the sender", v, sends)
	}
}

func wantError(t *testing.T, sends []Send, to Peer, id wirerelay.AllocationID, code wirerelay.ErrorCode) {
	t.Helper()
	var m wirerelay.Error
	if len(sends) != 1 || sends[0].To != to.AddrPort || m.Decode(sends[0].Data) != nil || m.Code != code || m.AllocationID != id {
		t.Fatalf("got %v, want ERROR %v for %v to %v", sends, code, id, to.AddrPort)
	}
}

func TestBindAndPing(t *testing.T) {
	r := newRig(t, 10)
	host := r.newClient("192.0.2.1:5000", 2)
	r.bind(host)
	if a, ok := r.engine.Table().Bound(host.alloc.ID); !ok || a != host.peer.AddrPort {
		t.Fatalf("binding: got %v %v", a, ok)
	}
	ping := encode(t, &wirerelay.Ping{AllocationID: host.alloc.ID, Number: 1})
	v, sends := r.handle(host.peer, ping)
	if v != Pinged || len(sends) != 1 || !bytes.Equal(sends[0].Data, ping) || sends[0].To != host.peer.AddrPort {
		t.Fatalf("PING: got %v %v, want it echoed unchanged", v, sends)
	}
	// From another address: ERROR 3.
	other := peerAt("192.0.2.99:1")
	_, sends = r.handle(other, ping)
	wantError(t, sends, other, host.alloc.ID, wirerelay.CodeClientPlayerMismatch)
	// An allocation the relay knows nothing of: ERROR 3, as for a client
	// that has not bound yet, so that it binds.
	stranger := r.newClient("192.0.2.2:1", 1)
	_, sends = r.handle(stranger.peer, encode(t, &wirerelay.Ping{AllocationID: stranger.alloc.ID}))
	wantError(t, sends, stranger.peer, stranger.alloc.ID, wirerelay.CodeClientPlayerMismatch)
}

// A relay that lost its table (a restart, a failover to another relay with
// the secret) answers its clients' next messages with ERROR 3, on which they
// bind again and carry on.
func TestLostTableMeansRebind(t *testing.T) {
	r := newRig(t, 10)
	host, joiner := connectPair(r, 2)
	fresh, err := NewEngine(Config{Sealer: r.sealer}, mustTable(t, TableConfig{Limit: 10, Clock: r.clock.Now}))
	if err != nil {
		t.Fatal(err)
	}
	r.engine = fresh
	_, sends := r.handle(joiner.peer, encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: []byte("x")}))
	wantError(t, sends, joiner.peer, joiner.alloc.ID, wirerelay.CodeClientPlayerMismatch)
	host.nonce, joiner.nonce = 1, 1
	r.bind(host)
	r.bind(joiner)
	req, _ := (&wirerelay.ConnectRequest{AllocationID: joiner.alloc.ID, ToConnectionData: host.data}).AppendShipped(nil)
	if v, _ := r.handle(joiner.peer, req); v != Accepted {
		t.Fatalf("connecting again after re-binding: got %v", v)
	}
}

func TestBindAuthentication(t *testing.T) {
	r := newRig(t, 10)
	c := r.newClient("192.0.2.1:5000", 1)
	bad := c.bindMsg(t, 0)
	bad[len(bad)-1] ^= 1
	if v, sends := r.handle(c.peer, bad); v != DroppedAuth || len(sends) != 0 {
		t.Fatalf("bad HMAC: got %v %v, want silence", v, sends)
	}
	// Connection data sealed with another secret does not open.
	other, _ := NewSealer([]byte("another-secret-of-16+-bytes"))
	data, _ := other.Seal(c.alloc)
	forged := &client{alloc: c.alloc, data: data, peer: c.peer}
	if v, sends := r.handle(c.peer, forged.bindMsg(t, 0)); v != DroppedAuth || len(sends) != 0 {
		t.Fatalf("foreign connection data: got %v %v, want silence", v, sends)
	}
	// Rotation: a sealer that knows both secrets opens both.
	both, _ := NewSealer([]byte("another-secret-of-16+-bytes"), []byte("0123456789abcdef-test-secret"))
	var a Allocation
	if both.Open(c.data, &a) != nil || both.Open(data, &a) != nil || a.ID != c.alloc.ID {
		t.Fatal("a sealer with both secrets must open data sealed with either")
	}
}

func TestBindNonceRules(t *testing.T) {
	r := newRig(t, 10)
	c := r.newClient("192.0.2.1:5000", 1)
	c.nonce = 5
	r.bind(c)
	// The same address may repeat its nonce.
	r.bind(c)
	// A lower nonce from the same address is refused.
	if v, sends := r.handle(c.peer, c.bindMsg(t, 4)); v != DroppedNonce || len(sends) != 0 {
		t.Fatalf("lower nonce, same address: got %v %v", v, sends)
	}
	// From a new address the nonce must be greater: a replay is silent.
	moved := peerAt("198.51.100.7:6000")
	if v, sends := r.handle(moved, c.bindMsg(t, 5)); v != DroppedNonce || len(sends) != 0 {
		t.Fatalf("replayed nonce from a new address: got %v %v, want silence", v, sends)
	}
	if a, _ := r.engine.Table().Bound(c.alloc.ID); a != c.peer.AddrPort {
		t.Fatalf("after a replay the binding moved to %v", a)
	}
	// A greater nonce moves the binding.
	if v, _ := r.handle(moved, c.bindMsg(t, 6)); v != Bound {
		t.Fatalf("greater nonce from a new address: got %v, want %v", v, Bound)
	}
	if a, _ := r.engine.Table().Bound(c.alloc.ID); a != moved.AddrPort {
		t.Fatalf("binding: got %v, want %v", a, moved.AddrPort)
	}
}

// connectPair binds a host and a joiner and connects them.
func connectPair(r *rig, maxConn int) (host, joiner *client) {
	host = r.newClient("192.0.2.1:5000", maxConn)
	joiner = r.newClient("192.0.2.2:5000", 1)
	r.bind(host)
	r.bind(joiner)
	req := &wirerelay.ConnectRequest{AllocationID: joiner.alloc.ID, ToConnectionData: host.data}
	b, _ := req.AppendShipped(nil)
	v, sends := r.handle(joiner.peer, b)
	var acc wirerelay.Accepted
	if v != Accepted || len(sends) != 1 || sends[0].To != joiner.peer.AddrPort || acc.Decode(sends[0].Data) != nil ||
		acc.From != host.alloc.ID || acc.To != joiner.alloc.ID {
		r.t.Fatalf("CONNECT_REQUEST: got %v %v, want ACCEPTED{From: host, To: joiner} to the joiner only", v, sends)
	}
	return host, joiner
}

func TestConnectAndRelay(t *testing.T) {
	r := newRig(t, 10)
	host, joiner := connectPair(r, 2)
	msg := encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: []byte("hello host")})
	v, sends := r.handle(joiner.peer, msg)
	if v != Relayed || len(sends) != 1 || sends[0].To != host.peer.AddrPort || !bytes.Equal(sends[0].Data, msg) {
		t.Fatalf("RELAY: got %v %v, want the whole message forwarded to the host and nothing to the sender", v, sends)
	}
	back := encode(t, &wirerelay.Relay{From: host.alloc.ID, To: joiner.alloc.ID, Content: []byte("hello joiner")})
	if v, sends := r.handle(host.peer, back); v != Relayed || sends[0].To != joiner.peer.AddrPort {
		t.Fatalf("RELAY back: got %v %v", v, sends)
	}
	// A spoofed sender address: ERROR 3.
	spoof := peerAt("203.0.113.5:1")
	_, sends = r.handle(spoof, msg)
	wantError(t, sends, spoof, joiner.alloc.ID, wirerelay.CodeClientPlayerMismatch)
	// Content over the maximum is dropped.
	big := encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: make([]byte, 1401)})
	if v, sends := r.handle(joiner.peer, big); v != DroppedTooLarge || len(sends) != 0 {
		t.Fatalf("1401-byte content: got %v %v, want a silent drop", v, sends)
	}
	// To a bound client it is not connected to: ERROR 5.
	third := r.newClient("192.0.2.3:5000", 1)
	r.bind(third)
	_, sends = r.handle(third.peer, encode(t, &wirerelay.Relay{From: third.alloc.ID, To: host.alloc.ID, Content: []byte("x")}))
	wantError(t, sends, third.peer, third.alloc.ID, wirerelay.CodeNotConnected)
}

func TestConnectRules(t *testing.T) {
	r := newRig(t, 10)
	host, _ := connectPair(r, 1)
	late := r.newClient("192.0.2.3:5000", 1)
	r.bind(late)
	req, _ := (&wirerelay.ConnectRequest{AllocationID: late.alloc.ID, ToConnectionData: host.data}).AppendShipped(nil)
	v, sends := r.handle(late.peer, req)
	var rej wirerelay.Rejected
	if v != Rejected || len(sends) != 1 || rej.Decode(sends[0].Data) != nil || rej.From != host.alloc.ID || rej.To != late.alloc.ID {
		t.Fatalf("past max connections: got %v %v, want REJECTED", v, sends)
	}
	self, _ := (&wirerelay.ConnectRequest{AllocationID: host.alloc.ID, ToConnectionData: host.data}).AppendShipped(nil)
	_, sends = r.handle(host.peer, self)
	wantError(t, sends, host.peer, host.alloc.ID, wirerelay.CodeSelfConnectNotAllowed)
	unbound := r.newClient("192.0.2.4:5000", 1)
	toUnbound, _ := (&wirerelay.ConnectRequest{AllocationID: late.alloc.ID, ToConnectionData: unbound.data}).AppendShipped(nil)
	_, sends = r.handle(late.peer, toUnbound)
	wantError(t, sends, late.peer, late.alloc.ID, wirerelay.CodeAllocationNotFound)
}

func TestDisconnectAndClose(t *testing.T) {
	r := newRig(t, 10)
	host, joiner := connectPair(r, 2)
	d := encode(t, &wirerelay.Disconnect{From: joiner.alloc.ID, To: host.alloc.ID})
	v, sends := r.handle(joiner.peer, d)
	if v != Disconnected || len(sends) != 2 || sends[0].To != host.peer.AddrPort || sends[1].To != joiner.peer.AddrPort ||
		!bytes.Equal(sends[0].Data, d) || !bytes.Equal(sends[1].Data, d) {
		t.Fatalf("DISCONNECT: got %v %v, want it forwarded to the host and confirmed to the sender", v, sends)
	}
	_, sends = r.handle(joiner.peer, encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: []byte("x")}))
	wantError(t, sends, joiner.peer, joiner.alloc.ID, wirerelay.CodeNotConnected)

	// A DISCONNECT to a client it is not connected to: ERROR 5, and
	// nothing reaches that client.
	_, sends = r.handle(joiner.peer, d)
	wantError(t, sends, joiner.peer, joiner.alloc.ID, wirerelay.CodeNotConnected)

	closeMsg := encode(t, &wirerelay.Close{AllocationID: joiner.alloc.ID})
	if v, sends := r.handle(peerAt("203.0.113.1:1"), closeMsg); v != Closed || len(sends) != 0 {
		t.Fatalf("CLOSE from another address: got %v %v", v, sends)
	}
	if _, ok := r.engine.Table().Bound(joiner.alloc.ID); !ok {
		t.Fatal("a CLOSE from another address unbound the client")
	}
	for range 2 { // idempotent
		if v, sends := r.handle(joiner.peer, closeMsg); v != Closed || len(sends) != 0 {
			t.Fatalf("CLOSE: got %v %v, want silence", v, sends)
		}
	}
	if _, ok := r.engine.Table().Bound(joiner.alloc.ID); ok {
		t.Fatal("CLOSE did not unbind")
	}
	if _, ok := r.engine.Table().Bound(host.alloc.ID); !ok {
		t.Fatal("CLOSE unbound another client")
	}
	// After CLOSE the allocation is released: ERROR 4.
	_, sends = r.handle(joiner.peer, encode(t, &wirerelay.Ping{AllocationID: joiner.alloc.ID}))
	wantError(t, sends, joiner.peer, joiner.alloc.ID, wirerelay.CodeAllocationNotFound)
}

func TestTimeouts(t *testing.T) {
	r := newRig(t, 10)
	host, joiner := connectPair(r, 2)
	r.clock.Advance(9 * time.Second)
	ping := encode(t, &wirerelay.Ping{AllocationID: joiner.alloc.ID, Number: 7})
	if v, _ := r.handle(joiner.peer, ping); v != Pinged {
		t.Fatalf("before the timeout: got %v", v)
	}
	// The host has had traffic too (the ping was not to it), so 10 s after
	// its last activity it times out.
	r.clock.Advance(2 * time.Second)
	hostPing := encode(t, &wirerelay.Ping{AllocationID: host.alloc.ID})
	_, sends := r.handle(host.peer, hostPing)
	wantError(t, sends, host.peer, host.alloc.ID, wirerelay.CodeTimeout)
	_, sends = r.handle(host.peer, hostPing) // and stays timed out
	wantError(t, sends, host.peer, host.alloc.ID, wirerelay.CodeTimeout)

	// A host alone after its BIND waits 60 s.
	alone := r.newClient("192.0.2.9:1", 4)
	r.bind(alone)
	r.clock.Advance(59 * time.Second)
	if v, _ := r.handle(alone.peer, encode(t, &wirerelay.Ping{AllocationID: alone.alloc.ID})); v != Pinged {
		t.Fatalf("alone host after 59 s: got %v, want %v", v, Pinged)
	}
	// A re-BIND after the timeout with a higher nonce binds again.
	host.nonce = 1
	r.bind(host)

	// The alone timeout lasts only until the first connection: a joiner
	// that has disconnected times out after the idle timeout.
	h2, j2 := connectPair(r, 2)
	_, _ = r.handle(j2.peer, encode(t, &wirerelay.Disconnect{From: j2.alloc.ID, To: h2.alloc.ID}))
	r.clock.Advance(11 * time.Second)
	_, sends = r.handle(j2.peer, encode(t, &wirerelay.Ping{AllocationID: j2.alloc.ID}))
	wantError(t, sends, j2.peer, j2.alloc.ID, wirerelay.CodeTimeout)
}

func TestAllocationExpiry(t *testing.T) {
	r := newRig(t, 10)
	c := r.newClient("192.0.2.1:1", 1)
	r.clock.Advance(time.Hour + time.Second)
	_, sends := r.handle(c.peer, c.bindMsg(t, 0))
	wantError(t, sends, c.peer, c.alloc.ID, wirerelay.CodeAllocationNotFound)
}

func TestBindingTableBounded(t *testing.T) {
	r := newRig(t, 3)
	for i := range 5 {
		c := r.newClient(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 1).String(), 1)
		v, _ := r.handle(c.peer, c.bindMsg(t, 0))
		want := Bound
		if i >= 3 {
			want = DroppedFull
		}
		if v != want {
			t.Fatalf("bind %d: got %v, want %v", i, v, want)
		}
	}
	if n := r.engine.Table().Len(); n != 3 {
		t.Fatalf("table: got %d bindings, want 3", n)
	}
}

// Nothing larger than what an unbound source sent ever goes back to it.
func TestNoAmplification(t *testing.T) {
	r := newRig(t, 16)
	host, joiner := connectPair(r, 2)
	_ = host
	rng := rand.New(rand.NewPCG(1, 2))
	valid := [][]byte{
		encode(t, &wirerelay.Ping{AllocationID: joiner.alloc.ID}),
		encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: []byte("x")}),
		encode(t, &wirerelay.Close{AllocationID: joiner.alloc.ID}),
		encode(t, &wirerelay.Disconnect{From: joiner.alloc.ID, To: host.alloc.ID}),
		{0xDA, 0x72, 0x00, 0x02},
		{0xDA, 0x72, 0x01, 0x02},
	}
	for i := range 20000 {
		var d []byte
		switch i % 3 {
		case 0:
			d = make([]byte, rng.IntN(64))
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
			if len(d) >= 4 && rng.IntN(2) == 0 {
				d[0], d[1], d[2] = 0xDA, 0x72, byte(rng.IntN(2))
			}
		case 1:
			d = bytes.Clone(valid[rng.IntN(len(valid))])
			d = d[:rng.IntN(len(d)+1)]
		default:
			d = valid[rng.IntN(len(valid))]
		}
		from := peerAt(netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(rng.IntN(250) + 1)}), uint16(rng.IntN(60000)+1)).String())
		r.engine.Handle(from, d, r.out)
		for _, s := range r.out.Sends {
			if s.To == from.AddrPort && len(s.Data) > len(d) {
				t.Fatalf("sent %d bytes to an unbound source that sent %d (%x)", len(s.Data), len(d), d)
			}
			if s.To != from.AddrPort && s.To != host.peer.AddrPort && s.To != joiner.peer.AddrPort {
				t.Fatalf("sent to %v, neither the source nor a bound client", s.To)
			}
		}
	}
	if n := r.engine.Table().Len(); n > 16 {
		t.Fatalf("table grew to %d", n)
	}
}

func TestInvalidVersionAnswered(t *testing.T) {
	r := newRig(t, 4)
	c := r.newClient("192.0.2.1:1", 1)
	p := encode(t, &wirerelay.Ping{AllocationID: c.alloc.ID})
	p[2] = 1
	_, sends := r.handle(c.peer, p)
	wantError(t, sends, c.peer, c.alloc.ID, wirerelay.CodeInvalidProtocolVersion)
	if v, sends := r.handle(c.peer, []byte{0xDA, 0x72, 1, 2}); v != DroppedUnanswerable || len(sends) != 0 {
		t.Fatalf("4-byte bad-version header: got %v %v, want silence", v, sends)
	}
}

func TestRelayAllocatesNothing(t *testing.T) {
	r := newRig(t, 4)
	host, joiner := connectPair(r, 2)
	msg := encode(t, &wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: make([]byte, 1000)})
	ping := encode(t, &wirerelay.Ping{AllocationID: host.alloc.ID})
	allocs := testing.AllocsPerRun(1000, func() {
		if r.engine.Handle(joiner.peer, msg, r.out) != Relayed || r.engine.Handle(host.peer, ping, r.out) != Pinged {
			panic("unexpected verdict")
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per RELAY and PING, want 0", allocs)
	}
}

func BenchmarkEngineRelay(b *testing.B) {
	r := newRig(b, 4)
	host, joiner := connectPair(r, 2)
	msg, _ := (&wirerelay.Relay{From: joiner.alloc.ID, To: host.alloc.ID, Content: make([]byte, 100)}).AppendTo(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		r.engine.Handle(joiner.peer, msg, r.out)
	}
}

func mustTable(t testing.TB, cfg TableConfig) *Table {
	t.Helper()
	tab, err := NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Destruct() })
	return tab
}

// An allocation bound to a network binds from any address and port in it,
// and a BIND from outside it (a forged source, or the key's holder
// pointing the allocation elsewhere) is dropped without an answer. Its
// connection data is sealed as version 3 and opens with the network; an
// allocation without one keeps version 2's length.
func TestBindNetwork(t *testing.T) {
	for _, tc := range []struct{ network, inside, outside string }{
		{"198.51.100.0/24", "198.51.100.77:4000", "198.51.101.1:4000"},
		{"2001:db8:7::/48", "[2001:db8:7:99::1]:4000", "[2001:db8:8::1]:4000"},
	} {
		r := newRig(t, 10)
		c := r.newClient(tc.inside, 2)
		c.alloc.BindNetwork = netip.MustParsePrefix(tc.network)
		var err error
		if c.data, err = r.sealer.Seal(c.alloc); err != nil {
			t.Fatal(err)
		}
		var opened Allocation
		if len(c.data) != ConnectionDataBoundLen || r.sealer.Open(c.data, &opened) != nil || opened.BindNetwork != c.alloc.BindNetwork || opened.ID != c.alloc.ID {
			t.Fatalf("%s: sealed %d bytes opening to %v, want %d opening to the network", tc.network, len(c.data), opened.BindNetwork, ConnectionDataBoundLen)
		}
		if v, sends := r.handle(peerAt(tc.outside), c.bindMsg(t, 0)); v != DroppedBindNetwork || len(sends) != 0 {
			t.Fatalf("%s: BIND from %s: got %v %v, want it dropped", tc.network, tc.outside, v, sends)
		}
		r.bind(c)
	}
	r := newRig(t, 10)
	if c := r.newClient("192.0.2.1:1", 1); len(c.data) != ConnectionDataLen {
		t.Fatalf("connection data without a network: %d bytes, want %d", len(c.data), ConnectionDataLen)
	}
}
