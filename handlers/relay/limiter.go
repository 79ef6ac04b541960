package relay

import (
	"container/heap"
	"sync"
	"time"
)

// AllocationLimiter counts unexpired allocations, in all, by client and by
// client network, for limits on how many are handed out. Every operation
// costs O(log n) in the allocations counted, and the limiter holds nothing
// for a client or network without an unexpired allocation. It is safe for
// concurrent use.
type AllocationLimiter struct {
	mu        sync.Mutex
	all       expiryCount[expiryItem]
	byClient  map[string]*expiryCount[expiry]
	byNetwork map[string]*expiryCount[expiry]
	prunedTo  int64 // every allocation expiring at or before this is uncounted
}

type expiryItem struct {
	at              int64 // unix nanoseconds
	client, network string
}

// Holder is whom an allocation is counted against: a client and the
// network it is in, each with its own limit (0: none).
type Holder struct {
	Client     string
	PerClient  int
	Network    string
	PerNetwork int
}

func (e expiryItem) time() int64 { return e.at }

// expiry is a client's allocation's expiry, in unix nanoseconds.
type expiry int64

func (e expiry) time() int64 { return int64(e) }

// NewAllocationLimiter returns an empty limiter.
func NewAllocationLimiter() *AllocationLimiter {
	return &AllocationLimiter{
		byClient:  make(map[string]*expiryCount[expiry]),
		byNetwork: make(map[string]*expiryCount[expiry]),
	}
}

// LimitReached says which limit refused a reservation.
type LimitReached uint8

const (
	LimitNone       LimitReached = iota
	LimitTotal                   // the limit on all allocations
	LimitPerClient               // the client's own limit
	LimitPerNetwork              // the limit of the client's network
)

// Reserve counts an allocation of h expiring at expires if, at now, fewer
// than limit unexpired ones are counted in all, fewer than h.PerClient for
// h.Client and fewer than h.PerNetwork for h.Network. Otherwise it reports
// which limit was reached and how long until an allocation it counts
// expires.
func (l *AllocationLimiter) Reserve(now, expires time.Time, limit int, h Holder) (LimitReached, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := now.UnixNano()
	l.prune(t)
	if l.all.n >= limit {
		return LimitTotal, time.Duration(l.all.first().at - t)
	}
	c, n := l.byClient[h.Client], l.byNetwork[h.Network]
	if h.PerClient > 0 && c != nil && c.n >= h.PerClient {
		return LimitPerClient, time.Duration(c.first().time() - t)
	}
	if h.PerNetwork > 0 && n != nil && n.n >= h.PerNetwork {
		return LimitPerNetwork, time.Duration(n.first().time() - t)
	}
	if c == nil {
		c = &expiryCount[expiry]{}
		l.byClient[h.Client] = c
	}
	if n == nil {
		n = &expiryCount[expiry]{}
		l.byNetwork[h.Network] = n
	}
	at := expires.UnixNano()
	l.all.add(expiryItem{at, h.Client, h.Network})
	c.add(expiry(at))
	n.add(expiry(at))
	return LimitNone, 0
}

// Release uncounts one allocation of h expiring at expires, one whose
// Reserve succeeded but that was not handed out. It must be called at most
// once per such Reserve.
func (l *AllocationLimiter) Release(expires time.Time, h Holder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := expires.UnixNano()
	if at <= l.prunedTo {
		return // expired, and uncounted then
	}
	c, n := l.byClient[h.Client], l.byNetwork[h.Network]
	if c == nil || n == nil || !l.all.release(expiryItem{at, h.Client, h.Network}) {
		return
	}
	releaseFrom(l.byClient, h.Client, c, at)
	releaseFrom(l.byNetwork, h.Network, n, at)
}

// releaseFrom uncounts one expiry at of key's count c in m, and forgets key
// once it holds none.
func releaseFrom(m map[string]*expiryCount[expiry], key string, c *expiryCount[expiry], at int64) {
	c.release(expiry(at))
	if c.n == 0 {
		delete(m, key)
	}
}

// Len returns how many unexpired allocations are counted at now.
func (l *AllocationLimiter) Len(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now.UnixNano())
	return l.all.n
}

// NetworkLen returns how many unexpired allocations of network are counted
// at now, and how many networks hold any.
func (l *AllocationLimiter) NetworkLen(now time.Time, network string) (n, networks int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now.UnixNano())
	if c := l.byNetwork[network]; c != nil {
		n = c.n
	}
	return n, len(l.byNetwork)
}

// ClientLen returns how many unexpired allocations of client are counted
// at now, and how many clients hold any.
func (l *AllocationLimiter) ClientLen(now time.Time, client string) (n, clients int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now.UnixNano())
	if c := l.byClient[client]; c != nil {
		n = c.n
	}
	return n, len(l.byClient)
}

// prune uncounts the allocations expired at t, in all and for their
// clients and networks, and forgets those left with none.
func (l *AllocationLimiter) prune(t int64) {
	l.prunedTo = max(l.prunedTo, t)
	for l.all.n > 0 && l.all.first().at <= t {
		e := l.all.pop()
		pruneFrom(l.byClient, e.client, t)
		pruneFrom(l.byNetwork, e.network, t)
	}
}

func pruneFrom(m map[string]*expiryCount[expiry], key string, t int64) {
	if c := m[key]; c != nil {
		c.popUntil(t)
		if c.n == 0 {
			delete(m, key)
		}
	}
}

// expiryCount counts expiry times. Release marks a time as released and
// leaves it in the heap until it comes to the top, so that releasing costs
// O(log n) rather than a search.
type expiryCount[T interface {
	comparable
	time() int64
}] struct {
	heap     expiryHeap[T]
	released map[T]int // entries released but still in the heap
	n        int       // entries counted: len(heap) minus released
}

func (c *expiryCount[T]) add(e T) {
	heap.Push(&c.heap, e)
	c.n++
}

// release uncounts one e; it reports false if none is counted.
func (c *expiryCount[T]) release(e T) bool {
	if c.n == 0 {
		return false
	}
	if c.released == nil {
		c.released = make(map[T]int)
	}
	c.released[e]++
	c.n--
	c.skipReleased()
	if len(c.heap.items) > 2*c.n+64 {
		c.compact()
	}
	return true
}

// compact drops every released entry from the heap. Called once released
// entries outnumber counted ones, it costs O(1) per release amortised and
// bounds the heap to about twice the entries counted.
func (c *expiryCount[T]) compact() {
	kept := c.heap.items[:0]
	for _, e := range c.heap.items {
		if k := c.released[e]; k > 0 {
			c.released[e] = k - 1
			continue
		}
		kept = append(kept, e)
	}
	clear(c.heap.items[len(kept):])
	c.heap.items = kept
	clear(c.released)
	heap.Init(&c.heap)
}

// first returns the earliest counted entry; c.n must be positive.
func (c *expiryCount[T]) first() T { return c.heap.items[0] }

// pop removes and returns the earliest counted entry; c.n must be positive.
func (c *expiryCount[T]) pop() T {
	e := heap.Pop(&c.heap).(T)
	c.n--
	c.skipReleased()
	return e
}

// popUntil uncounts the entries at or before t.
func (c *expiryCount[T]) popUntil(t int64) {
	for c.n > 0 && c.first().time() <= t {
		c.pop()
	}
}

// skipReleased drops released entries from the top of the heap, so the top
// is always a counted entry.
func (c *expiryCount[T]) skipReleased() {
	for len(c.heap.items) > 0 {
		top := c.heap.items[0]
		k := c.released[top]
		if k == 0 {
			return
		}
		heap.Pop(&c.heap)
		if k == 1 {
			delete(c.released, top)
		} else {
			c.released[top] = k - 1
		}
	}
}

type expiryHeap[T interface{ time() int64 }] struct{ items []T }

func (h *expiryHeap[T]) Len() int           { return len(h.items) }
func (h *expiryHeap[T]) Less(i, j int) bool { return h.items[i].time() < h.items[j].time() }
func (h *expiryHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *expiryHeap[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *expiryHeap[T]) Pop() any {
	old := h.items
	x := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	h.items = old[:len(old)-1]
	return x
}
