package relay

import (
	"cmp"
	"errors"
	"hash/maphash"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/internal/periodic"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Defaults of the relay's settings, shared by the engine, the table and the
// Caddy modules.
const (
	DefaultIdleTimeout  = 10 * time.Second
	DefaultAloneTimeout = 60 * time.Second
	DefaultMaxBindings  = 100_000
)

// goneTTL is the least time an ended binding is remembered, so that its
// client's next message is answered with ERROR 1 (timeout); a record is
// also kept until its allocation expires, so that an old BIND cannot be
// replayed with a stale nonce while the allocation could still be bound.
const goneTTL = 10 * time.Minute

// tableShards is how many parts the table is split into, each with its own
// lock, so that a sweep or a BIND holds up only the RELAYs of one part.
const tableShards = 64

type goneRecord struct {
	at       int64
	expires  time.Time
	addr     netip.AddrPort
	nonce    uint16
	timedOut bool
}

// TableConfig sizes a Table and says how long its bindings live.
type TableConfig struct {
	// Limit is the most live bindings. Default: DefaultMaxBindings.
	Limit int
	// IdleTimeout ends a binding that has had no traffic (sent or received)
	// for this long. Default: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// AloneTimeout replaces IdleTimeout for a binding that has not been
	// connected to any peer since it was bound (a host waiting for its first
	// player). Default: DefaultAloneTimeout.
	AloneTimeout time.Duration
	// Clock gives the time. Default: time.Now.
	Clock func() time.Time
	// Sweep, when positive, is how often a goroutine ends idle bindings,
	// until Destruct. Without it bindings end when next looked at.
	Sweep time.Duration
}

// Table holds the relay's bindings, bounded in number. It outlives
// configuration reloads, so a reload drops no live session.
//
// It is split into shards by a keyed hash of the allocation ID, each with
// its own lock, which guards the shard's maps and its bindings' nonces and
// peer sets; a binding's address, activity and state are atomic, so a RELAY
// takes one read lock, its sender's. A connection between two bindings is
// recorded in both, each pointing at the other, so a binding that ends can
// be unlinked from its peers after its own shard's lock is released, and a
// link to an ended binding is never taken for one to a later binding of the
// same allocation.
type Table struct {
	shards      [tableShards]tableShard
	seed        maphash.Seed
	live        atomic.Int64
	limit       int
	goneLimit   int   // per shard
	idle, alone int64 // nanoseconds

	epoch time.Time
	clock func() time.Time
	// monotonic: clock is time.Now, and now reads the monotonic clock
	// alone (time.Now reads the wall clock too, which costs as much
	// again, on every message relayed).
	monotonic bool
	stop      chan struct{}
	once      sync.Once
}

type tableShard struct {
	mu   sync.RWMutex
	byID map[wirerelay.AllocationID]*Binding
	gone map[wirerelay.AllocationID]goneRecord
	_    [64 - 40]byte // keep each shard's lock on its own cache line
}

// WithDefaults returns c with every zero field set to its default.
func (c TableConfig) WithDefaults() TableConfig {
	c.Limit = cmp.Or(c.Limit, DefaultMaxBindings)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.AloneTimeout = cmp.Or(c.AloneTimeout, DefaultAloneTimeout)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// NewTable returns an empty table.
func NewTable(cfg TableConfig) (*Table, error) {
	monotonic := cfg.Clock == nil
	cfg = cfg.WithDefaults()
	switch {
	case cfg.Limit < 0:
		return nil, errors.New("relay: the binding limit must be positive")
	case cfg.IdleTimeout < 0 || cfg.AloneTimeout < 0:
		return nil, errors.New("relay: timeouts must be positive")
	}
	t := &Table{
		seed:      maphash.MakeSeed(),
		limit:     cfg.Limit,
		goneLimit: (cfg.Limit + tableShards - 1) / tableShards,
		idle:      int64(cfg.IdleTimeout),
		alone:     int64(cfg.AloneTimeout),
		clock:     cfg.Clock,
		monotonic: monotonic,
		epoch:     cfg.Clock(),
		stop:      make(chan struct{}),
	}
	for i := range t.shards {
		t.shards[i].byID = make(map[wirerelay.AllocationID]*Binding)
		t.shards[i].gone = make(map[wirerelay.AllocationID]goneRecord)
	}
	if cfg.Sweep > 0 {
		go periodic.Run(t.stop, cfg.Sweep, func() { t.Sweep() })
	}
	return t, nil
}

// Destruct stops the sweeper.
func (t *Table) Destruct() error {
	t.once.Do(func() { close(t.stop) })
	return nil
}

func (t *Table) now() int64 {
	if t.monotonic {
		return int64(time.Since(t.epoch))
	}
	return int64(t.clock().Sub(t.epoch))
}

func (t *Table) shardIndex(id wirerelay.AllocationID) int {
	return int(maphash.Bytes(t.seed, id[:]) % tableShards)
}

func (t *Table) shardOf(id wirerelay.AllocationID) *tableShard {
	return &t.shards[t.shardIndex(id)]
}

// Len is the number of live bindings.
func (t *Table) Len() int { return int(t.live.Load()) }

// Limit is the most bindings the table holds.
func (t *Table) Limit() int { return t.limit }

// Bound reports whether id is bound now, and where.
func (t *Table) Bound(id wirerelay.AllocationID) (netip.AddrPort, bool) {
	now := t.now()
	s := t.shardOf(id)
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := s.byID[id]
	if b == nil || b.expired(now, t) {
		return netip.AddrPort{}, false
	}
	return b.peer.Load().AddrPort, true
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
// changed the table's settings, a failover to another relay with the
// secret. The caller holds s's lock.
func (s *tableShard) senderCode(id wirerelay.AllocationID, b *Binding) wirerelay.ErrorCode {
	if b != nil {
		return wirerelay.CodeTimeout
	}
	g, ok := s.gone[id]
	switch {
	case ok && g.timedOut:
		return wirerelay.CodeTimeout
	case ok:
		return wirerelay.CodeAllocationNotFound
	}
	return wirerelay.CodeClientPlayerMismatch
}

// senderCheck finds the binding of id for a message from src, or the error
// code to answer. The caller holds s's lock (read or write).
func (t *Table) senderCheck(s *tableShard, id wirerelay.AllocationID, src netip.AddrPort, now int64) (*Binding, wirerelay.ErrorCode) {
	b := s.byID[id]
	switch {
	case b == nil || b.expired(now, t):
		return nil, s.senderCode(id, b)
	case b.peer.Load().AddrPort != src:
		return nil, wirerelay.CodeClientPlayerMismatch
	}
	return b, 0
}

// expireLater ends the given bindings if they have expired. It looks under
// the read lock first, so that messages naming allocations the table does
// not hold (anyone can send those) never take a write lock.
func (t *Table) expireLater(ids ...wirerelay.AllocationID) {
	now := t.now()
	for _, id := range ids {
		s := t.shardOf(id)
		s.mu.RLock()
		b := s.byID[id]
		stale := b != nil && b.expired(now, t)
		s.mu.RUnlock()
		if !stale {
			continue
		}
		s.mu.Lock()
		b = s.byID[id]
		if b == nil || !b.expired(now, t) {
			s.mu.Unlock()
			continue
		}
		t.remove(s, b, now, true)
		s.mu.Unlock()
		t.unlink(b)
	}
}

// remove ends b, which must be in s; the caller holds s's write lock, and
// calls unlink(b) once it has released it.
func (t *Table) remove(s *tableShard, b *Binding, now int64, timedOut bool) {
	b.ended.Store(true)
	delete(s.byID, b.id)
	t.live.Add(-1)
	if len(s.gone) >= t.goneLimit {
		for k := range s.gone { // drop an arbitrary record to stay bounded
			delete(s.gone, k)
			break
		}
	}
	s.gone[b.id] = goneRecord{at: now, expires: b.expires, addr: b.peer.Load().AddrPort, nonce: b.nonce, timedOut: timedOut}
}

// unlink removes the links of b, which has ended, from its peers. Nothing
// else reads or writes b's peer set once it has left the table.
func (t *Table) unlink(b *Binding) {
	for p := range b.peers {
		s := t.shardOf(p)
		s.mu.Lock()
		if o := s.byID[p]; o != nil && o.peers[b.id] == b {
			delete(o.peers, b.id)
		}
		s.mu.Unlock()
	}
}

// Sweep ends every binding idle past its timeout and forgets old records,
// holding one shard's lock at a time, and only to change something. It
// returns the number of bindings ended.
func (t *Table) Sweep() int {
	now := t.now()
	wall := t.clock()
	n := 0
	var ended []*Binding
	var forget []wirerelay.AllocationID
	for i := range t.shards {
		s := &t.shards[i]
		ended, forget = ended[:0], forget[:0]
		s.mu.RLock()
		for _, b := range s.byID {
			if b.expired(now, t) {
				ended = append(ended, b)
			}
		}
		for id, g := range s.gone {
			if now-g.at > int64(goneTTL) && wall.After(g.expires) {
				forget = append(forget, id)
			}
		}
		s.mu.RUnlock()
		if len(ended) == 0 && len(forget) == 0 {
			continue
		}
		s.mu.Lock()
		for _, id := range forget {
			delete(s.gone, id)
		}
		k := 0
		for _, b := range ended {
			if s.byID[b.id] == b && b.expired(now, t) {
				t.remove(s, b, now, true)
				ended[k] = b
				k++
			}
		}
		s.mu.Unlock()
		for _, b := range ended[:k] {
			t.unlink(b)
		}
		n += k
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

// reserve counts one more live binding unless the table is full.
func (t *Table) reserve() bool {
	for {
		n := t.live.Load()
		if n >= int64(t.limit) {
			return false
		}
		if t.live.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// bind binds a (authenticated by the caller) to src. It returns Bound,
// DroppedNonce, DroppedFull, or ErrorSent when the allocation has expired
// and may not be bound anew.
func (t *Table) bind(a *Allocation, src Peer, nonce uint16) Verdict {
	now := t.now()
	s := t.shardOf(a.ID)
	s.mu.Lock()
	b := s.byID[a.ID]
	var ended *Binding
	if b != nil && b.expired(now, t) {
		t.remove(s, b, now, true)
		ended, b = b, nil
	}
	v := t.bindLocked(s, b, a, src, nonce, now)
	s.mu.Unlock()
	if ended != nil {
		t.unlink(ended)
	}
	return v
}

func (t *Table) bindLocked(s *tableShard, b *Binding, a *Allocation, src Peer, nonce uint16, now int64) Verdict {
	if b != nil {
		if !nonceOK(b.nonce, b.peer.Load().AddrPort, src.AddrPort, nonce) {
			return DroppedNonce
		}
		b.nonce = nonce
		b.peer.Store(&src)
		b.touch(now)
		return Bound
	}
	if g, ok := s.gone[a.ID]; ok && !nonceOK(g.nonce, g.addr, src.AddrPort, nonce) {
		return DroppedNonce
	}
	if t.clock().After(a.Expires) {
		return ErrorSent
	}
	if !t.reserve() {
		return DroppedFull
	}
	b = &Binding{
		id: a.ID, nonce: nonce,
		maxConnections: a.MaxConnections, expires: a.Expires,
		peers: make(map[wirerelay.AllocationID]*Binding),
	}
	b.peer.Store(&src)
	b.lastActivity.Store(now)
	s.byID[a.ID] = b
	delete(s.gone, a.ID)
	return Bound
}

// relayTarget checks that from is bound at src and connected to to, and
// returns to's address. It takes only from's shard lock: what it reads of
// to is atomic.
func (t *Table) relayTarget(from wirerelay.AllocationID, src netip.AddrPort, to wirerelay.AllocationID) (netip.AddrPort, wirerelay.ErrorCode) {
	now := t.now()
	s := t.shardOf(from)
	s.mu.RLock()
	f, code := t.senderCheck(s, from, src, now)
	var b *Binding
	if f != nil {
		b = f.peers[to]
	}
	s.mu.RUnlock()
	if f == nil {
		return netip.AddrPort{}, code
	}
	if b == nil || b.ended.Load() || b.expired(now, t) {
		return netip.AddrPort{}, wirerelay.CodeNotConnected
	}
	b.touch(now)
	f.touch(now)
	return b.peer.Load().AddrPort, 0
}

// ping checks that id is bound at src and counts the ping as traffic.
func (t *Table) ping(id wirerelay.AllocationID, src netip.AddrPort) wirerelay.ErrorCode {
	now := t.now()
	s := t.shardOf(id)
	s.mu.RLock()
	b, code := t.senderCheck(s, id, src, now)
	if b != nil {
		b.touch(now)
	}
	s.mu.RUnlock()
	return code
}

// liveLocked returns the binding of id in s, ending it first if it has
// expired; an ended binding is added to ended for unlinking. The caller
// holds s's write lock.
func (t *Table) liveLocked(s *tableShard, id wirerelay.AllocationID, now int64, ended *[]*Binding) *Binding {
	b := s.byID[id]
	if b != nil && b.expired(now, t) {
		t.remove(s, b, now, true)
		*ended = append(*ended, b)
		return nil
	}
	return b
}

// senderLock is what connect and disconnect hold while they work, from
// lockSender until a deferred release: the write locks of two shards, the
// time of the check, and the bindings found expired under the locks, which
// are unlinked only once the locks are released (unlink takes other shards'
// locks). It holds no function value, so taking it allocates nothing.
type senderLock struct {
	t             *Table
	now           int64
	first, second *tableShard // locked, in this order; second is nil if one shard holds both
	ended         []*Binding
}

// lockSender write-locks the shards of sender and of other, the allocation
// a message from src names, lower index first so that two callers never
// wait for each other. It returns the shard of other and the live binding
// of sender, or nil and the error code to answer if sender is not bound at
// src. Bindings it finds expired are ended and left in l for release. The
// caller defers l.release() before calling it.
func (t *Table) lockSender(l *senderLock, sender wirerelay.AllocationID, src netip.AddrPort, other wirerelay.AllocationID) (*Binding, *tableShard, wirerelay.ErrorCode) {
	l.t, l.now = t, t.now()
	is, io := t.shardIndex(sender), t.shardIndex(other)
	ss, so := &t.shards[is], &t.shards[io]
	first, second := ss, so
	if io < is {
		first, second = so, ss
	}
	first.mu.Lock()
	if is == io {
		second = nil
	} else {
		second.mu.Lock()
	}
	l.first, l.second = first, second
	b := t.liveLocked(ss, sender, l.now, &l.ended)
	switch {
	case b == nil:
		return nil, so, ss.senderCode(sender, nil)
	case b.peer.Load().AddrPort != src:
		return nil, so, wirerelay.CodeClientPlayerMismatch
	}
	return b, so, 0
}

// release unlocks what lockSender locked, then unlinks the bindings ended
// under the locks.
func (l *senderLock) release() {
	if l.second != nil {
		l.second.mu.Unlock()
	}
	if l.first != nil {
		l.first.mu.Unlock()
	}
	for _, b := range l.ended {
		l.t.unlink(b)
	}
}

// connect connects requester (bound at src) to host.
func (t *Table) connect(requester wirerelay.AllocationID, src netip.AddrPort, host wirerelay.AllocationID) (Verdict, wirerelay.ErrorCode) {
	var l senderLock
	defer l.release()
	r, sh, code := t.lockSender(&l, requester, src, host)
	if r == nil {
		return ErrorSent, code
	}
	now := l.now
	h := t.liveLocked(sh, host, now, &l.ended)
	if h == nil {
		return ErrorSent, wirerelay.CodeAllocationNotFound
	}
	r.touch(now)
	if r.peers[host] == h {
		return Accepted, 0 // a resent request: answer it again
	}
	if len(h.peers) >= h.maxConnections {
		return Rejected, 0
	}
	r.peers[host] = h
	h.peers[requester] = r
	r.everConnected.Store(true)
	h.everConnected.Store(true)
	h.touch(now)
	return Accepted, 0
}

// disconnect ends the connection between from (bound at src) and to, and
// returns to's address for the notice.
func (t *Table) disconnect(from wirerelay.AllocationID, src netip.AddrPort, to wirerelay.AllocationID) (netip.AddrPort, wirerelay.ErrorCode) {
	var l senderLock
	defer l.release()
	f, st, code := t.lockSender(&l, from, src, to)
	if f == nil {
		return netip.AddrPort{}, code
	}
	now := l.now
	b := st.byID[to]
	if b == nil || b.expired(now, t) {
		return netip.AddrPort{}, wirerelay.CodeAllocationNotFound
	}
	if f.peers[to] != b {
		// Only a connected peer may be told of a disconnect.
		return netip.AddrPort{}, wirerelay.CodeNotConnected
	}
	delete(f.peers, to)
	delete(b.peers, from)
	f.touch(now)
	b.touch(now)
	return b.peer.Load().AddrPort, 0
}

// close unbinds id if src is its bound address; anything else is ignored.
func (t *Table) close(id wirerelay.AllocationID, src netip.AddrPort) {
	now := t.now()
	s := t.shardOf(id)
	s.mu.Lock()
	b := s.byID[id]
	if b == nil || b.peer.Load().AddrPort != src {
		s.mu.Unlock()
		return
	}
	t.remove(s, b, now, false)
	s.mu.Unlock()
	t.unlink(b)
}
