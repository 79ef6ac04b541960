package ratelimit

import (
	"sync"
	"time"
)

// Table holds the limiter states of many keys (clients, targets), at most
// Max of them, under one lock. A key is forgotten once its state is idle (it
// could send a whole burst again, so forgetting it changes nothing). When
// the table is full of keys that are not idle, new keys are refused until
// some are: whoever controls many keys (addresses) can then keep newcomers
// out for a while, but can never wipe or dilute the limits of the keys
// already held, which evicting or clearing would do.
//
// A table outlives the limits applied to it: Allow takes the Limit, so a
// table kept across configuration reloads keeps its keys' states under the
// new limits. Times come from the table's Clock, which must therefore live
// as long as the table.
type Table[K comparable] struct {
	clock Clock
	max   int // Allow's bound

	mu        sync.Mutex
	states    map[K]State
	nextSweep int64
}

// NewTable returns an empty table of at most maxKeys keys (at least 1),
// reading time from clock.
func NewTable[K comparable](maxKeys int, clock Clock) *Table[K] {
	return &Table[K]{clock: clock, max: max(maxKeys, 1), states: make(map[K]State)}
}

// sweepEvery bounds how often a full table is walked for idle keys.
const sweepEvery = int64(time.Second)

// Allow admits one event of key under l now, or reports how long until it
// would be admitted. A key that is new while the table is full of keys
// that are not idle is refused until the next sweep.
func (t *Table[K]) Allow(l Limit, key K) (bool, time.Duration) {
	return t.AllowWithin(l, key, t.max)
}

// AllowN is Allow for n events at once (n ≥ 1), admitted as Limit.TakeN
// admits them: all or none.
func (t *Table[K]) AllowN(l Limit, key K, n int64) (bool, time.Duration) {
	return t.AllowNWithin(l, key, n, t.max)
}

// AllowWithin is Allow with a bound of the caller's own in place of the
// table's: a new key is admitted only while the table holds fewer than
// maxKeys keys (at least 1). Users of one table with different bounds
// (configurations sharing state) each keep theirs: none admits a key past
// its own bound, and the table never holds more than the largest.
func (t *Table[K]) AllowWithin(l Limit, key K, maxKeys int) (bool, time.Duration) {
	return t.AllowNWithin(l, key, 1, maxKeys)
}

// AllowNWithin is AllowN with AllowWithin's bound.
func (t *Table[K]) AllowNWithin(l Limit, key K, n int64, maxKeys int) (bool, time.Duration) {
	if l.Unlimited() {
		return true, 0
	}
	maxKeys = max(maxKeys, 1)
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s, known := t.states[key]
	if !known && len(t.states) >= maxKeys {
		t.sweep(now, min(int64(l.interval), sweepEvery))
		if len(t.states) >= maxKeys {
			return false, time.Duration(max(t.nextSweep-now, 1))
		}
	}
	next, ok := l.TakeN(s, now, n)
	if !ok {
		return false, l.Wait(s, now)
	}
	t.states[key] = next
	return true, 0
}

// Wait is how long from now until key would be admitted under l, without
// counting an event: 0 if it would be now. A key the table does not hold
// waits 0 (whether a full table would take it is Allow's to say).
func (t *Table[K]) Wait(l Limit, key K) time.Duration {
	if l.Unlimited() {
		return 0
	}
	now := t.clock.Now()
	t.mu.Lock()
	s, known := t.states[key]
	t.mu.Unlock()
	if !known {
		return 0
	}
	return l.Wait(s, now)
}

// sweep forgets idle keys, at most once per every nanoseconds, so a full
// table costs one walk per period, not one per request. The caller holds
// mu.
func (t *Table[K]) sweep(now, every int64) {
	if now < t.nextSweep {
		return
	}
	t.nextSweep = now + every
	for k, s := range t.states {
		if s.Idle(now) {
			delete(t.states, k)
		}
	}
}

// Len returns how many keys are held.
func (t *Table[K]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.states)
}
