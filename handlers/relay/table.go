package relay

import (
	"net"
	"net/netip"
	"sync"
	"time"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// goneTTL is the least time an ended binding is remembered, so that its
// client's next message is answered with ERROR 1 (timeout); a record is
// also kept until its allocation expires, so that an old BIND cannot be
// replayed with a stale nonce while the allocation could still be bound.
const goneTTL = 10 * time.Minute

type goneRecord struct {
	at       int64
	expires  time.Time
	addr     netip.AddrPort
	nonce    uint16
	timedOut bool
}

// Table holds the relay's bindings, bounded in number. It outlives
// configuration reloads, so a reload drops no live session.
type Table struct {
	mu          sync.RWMutex
	byID        map[wirerelay.AllocationID]*Binding
	gone        map[wirerelay.AllocationID]goneRecord
	limit       int
	idle, alone int64 // nanoseconds

	epoch time.Time
	clock func() time.Time
	stop  chan struct{}
	once  sync.Once
}

// NewTable returns a table of at most limit bindings. clock gives the time
// (time.Now when nil). If sweep is positive a goroutine ends idle bindings
// every sweep until Destruct.
func NewTable(limit int, clock func() time.Time, sweep time.Duration) *Table {
	if clock == nil {
		clock = time.Now
	}
	t := &Table{
		byID:  make(map[wirerelay.AllocationID]*Binding),
		gone:  make(map[wirerelay.AllocationID]goneRecord),
		limit: max(limit, 1),
		idle:  int64(10 * time.Second),
		alone: int64(60 * time.Second),
		clock: clock,
		epoch: clock(),
		stop:  make(chan struct{}),
	}
	if sweep > 0 {
		go func() {
			tick := time.NewTicker(sweep)
			defer tick.Stop()
			for {
				select {
				case <-t.stop:
					return
				case <-tick.C:
					t.Sweep()
				}
			}
		}()
	}
	return t
}

// Destruct stops the sweeper.
func (t *Table) Destruct() error {
	t.once.Do(func() { close(t.stop) })
	return nil
}

func (t *Table) setTimeouts(idle, alone time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.idle, t.alone = int64(idle), int64(alone)
}

func (t *Table) now() int64 { return int64(t.clock().Sub(t.epoch)) }

// Len is the number of live bindings.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byID)
}

// Limit is the most bindings the table holds.
func (t *Table) Limit() int { return t.limit }

// Bound reports whether id is bound now, and where.
func (t *Table) Bound(id wirerelay.AllocationID) (netip.AddrPort, bool) {
	now := t.now()
	t.mu.RLock()
	defer t.mu.RUnlock()
	b := t.byID[id]
	if b == nil || b.expired(now, t) {
		return netip.AddrPort{}, false
	}
	return b.peer.AddrPort, true
}

func (t *Table) isBoundAt(id wirerelay.AllocationID, addr netip.AddrPort) bool {
	a, ok := t.Bound(id)
	return ok && a == addr
}

// senderCode is the ERROR code for a message from an allocation that is not
// bound (b, if not nil, being its binding that has just expired): 1 if its
// binding timed out, 4 if its client closed it, and 3 if the relay knows
// nothing of it. Answering 3 there, as for a client that has not bound yet,
// makes the client bind again (clients give an allocation up on 1 and 4), so
// sessions survive a relay that lost its table: a restart, a reload that
// changed the table's size, a failover to another relay with the secret.
// The caller holds a lock.
func (t *Table) senderCode(id wirerelay.AllocationID, b *Binding) wirerelay.ErrorCode {
	if b != nil {
		return wirerelay.CodeTimeout
	}
	g, ok := t.gone[id]
	switch {
	case ok && g.timedOut:
		return wirerelay.CodeTimeout
	case ok:
		return wirerelay.CodeAllocationNotFound
	}
	return wirerelay.CodeClientPlayerMismatch
}

// expireLater ends the given bindings if they have expired.
func (t *Table) expireLater(ids ...wirerelay.AllocationID) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if b := t.byID[id]; b != nil && b.expired(now, t) {
			t.remove(b, now, true)
		}
	}
}

// remove ends b, unlinking it from its peers. The caller holds mu.
func (t *Table) remove(b *Binding, now int64, timedOut bool) {
	for p := range b.peers {
		if other := t.byID[p]; other != nil {
			delete(other.peers, b.id)
		}
	}
	delete(t.byID, b.id)
	if len(t.gone) >= t.limit {
		for k := range t.gone { // drop an arbitrary record to stay bounded
			delete(t.gone, k)
			break
		}
	}
	t.gone[b.id] = goneRecord{at: now, expires: b.expires, addr: b.peer.AddrPort, nonce: b.nonce, timedOut: timedOut}
}

// Sweep ends every binding idle past its timeout and forgets old records.
// It returns the number of bindings ended.
func (t *Table) Sweep() int {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, b := range t.byID {
		if b.expired(now, t) {
			t.remove(b, now, true)
			n++
		}
	}
	wall := t.clock()
	for id, g := range t.gone {
		if now-g.at > int64(goneTTL) && wall.After(g.expires) {
			delete(t.gone, id)
		}
	}
	return n
}

// nonceOK applies the replay rule: from the address already bound the
// nonce may repeat; from a new address it must be greater.
func nonceOK(last uint16, lastAddr, addr netip.AddrPort, nonce uint16) bool {
	if addr == lastAddr {
		return nonce >= last
	}
	return nonce > last
}

// bind binds a (authenticated by the caller) to src. It returns Bound,
// DroppedNonce, DroppedFull, or ErrorSent when the allocation has expired
// and may not be bound anew.
func (t *Table) bind(a *Allocation, src Peer, nonce uint16) Verdict {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.byID[a.ID]
	if b != nil && b.expired(now, t) {
		t.remove(b, now, true)
		b = nil
	}
	if b != nil {
		if !nonceOK(b.nonce, b.peer.AddrPort, src.AddrPort, nonce) {
			return DroppedNonce
		}
		b.nonce, b.peer = nonce, src
		b.touch(now)
		return Bound
	}
	if g, ok := t.gone[a.ID]; ok && !nonceOK(g.nonce, g.addr, src.AddrPort, nonce) {
		return DroppedNonce
	}
	if t.clock().After(a.Expires) {
		return ErrorSent
	}
	if len(t.byID) >= t.limit {
		return DroppedFull
	}
	b = &Binding{id: a.ID, peer: src, nonce: nonce, maxConnections: a.MaxConnections, expires: a.Expires, peers: make(map[wirerelay.AllocationID]struct{})}
	b.lastActivity.Store(now)
	t.byID[a.ID] = b
	delete(t.gone, a.ID)
	return Bound
}

// sender checks, under the write lock, that id is bound at src.
func (t *Table) sender(id wirerelay.AllocationID, src netip.AddrPort, now int64) (*Binding, wirerelay.ErrorCode) {
	b := t.byID[id]
	if b != nil && b.expired(now, t) {
		t.remove(b, now, true)
		return nil, wirerelay.CodeTimeout
	}
	if b == nil {
		return nil, t.senderCode(id, nil)
	}
	if b.peer.AddrPort != src {
		return nil, wirerelay.CodeClientPlayerMismatch
	}
	return b, 0
}

// connect connects requester (bound at src) to host.
func (t *Table) connect(requester wirerelay.AllocationID, src netip.AddrPort, host wirerelay.AllocationID) (Verdict, wirerelay.ErrorCode) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r, code := t.sender(requester, src, now)
	if r == nil {
		return ErrorSent, code
	}
	h := t.byID[host]
	if h != nil && h.expired(now, t) {
		t.remove(h, now, true)
		h = nil
	}
	if h == nil {
		return ErrorSent, wirerelay.CodeAllocationNotFound
	}
	r.touch(now)
	if r.connected(host) {
		return Accepted, 0 // a resent request: answer it again
	}
	if len(h.peers) >= h.maxConnections {
		return Rejected, 0
	}
	r.peers[host] = struct{}{}
	h.peers[requester] = struct{}{}
	r.everConnected, h.everConnected = true, true
	h.touch(now)
	return Accepted, 0
}

// disconnect ends the connection between from (bound at src) and to, and
// returns to's address for the notice.
func (t *Table) disconnect(from wirerelay.AllocationID, src netip.AddrPort, to wirerelay.AllocationID) (net.Addr, wirerelay.ErrorCode) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	f, code := t.sender(from, src, now)
	if f == nil {
		return nil, code
	}
	b := t.byID[to]
	if b == nil || b.expired(now, t) {
		return nil, wirerelay.CodeAllocationNotFound
	}
	if !f.connected(to) {
		// Only a connected peer may be told of a disconnect.
		return nil, wirerelay.CodeNotConnected
	}
	delete(f.peers, to)
	delete(b.peers, from)
	f.touch(now)
	b.touch(now)
	return b.peer.Addr, 0
}

// close unbinds id if src is its bound address; anything else is ignored.
func (t *Table) close(id wirerelay.AllocationID, src netip.AddrPort) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.byID[id]; b != nil && b.peer.AddrPort == src {
		t.remove(b, now, false)
	}
}
