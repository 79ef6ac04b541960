package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Policy says how long a result stays usable. Callers pass it with every
// Get because it depends on what was asked (a server's player list ages
// faster than its rules). A load's outcome is judged by the Policy of the
// Get that started it; freshness on a later Get by that Get's Policy.
// Negative durations count as zero.
type Policy struct {
	// TTL is how long a loaded value is fresh, counted from the moment
	// its load returned.
	TTL time.Duration

	// StaleWhileRevalidate is how long after TTL the value is still
	// served, at once, while one background load refreshes it.
	StaleWhileRevalidate time.Duration

	// StaleIfError is how long after TTL the value is served instead of
	// the error of a failed refresh. A Get past TTL+StaleWhileRevalidate
	// waits for the refresh as on a miss; if it fails, the Get gets the
	// stale value and no error, and the value stays cached. So that a
	// server that stopped answering costs one timeout per NegativeTTL
	// rather than one per request, later Gets within TTL+StaleIfError
	// then get the stale value at once, and one of them starts a
	// background retry once NegativeTTL has passed since the failure.
	StaleIfError time.Duration

	// NegativeTTL is how long a load's error is served, without loading
	// again, when there is no value to fall back on; it also spaces
	// retries of a failed refresh (see StaleIfError). Zero: errors are
	// not cached, and a failed refresh is retried as soon as a Get
	// finds no load running.
	NegativeTTL time.Duration

	// LoadTimeout bounds a load's context. It is a wall-clock deadline
	// (the load does real I/O), not read from the Results' clock. Zero:
	// the load's context has no deadline.
	LoadTimeout time.Duration
}

// clamped returns p with negative durations as zero.
func (p Policy) clamped() Policy {
	for _, d := range []*time.Duration{&p.TTL, &p.StaleWhileRevalidate, &p.StaleIfError, &p.NegativeTTL, &p.LoadTimeout} {
		*d = max(*d, 0)
	}
	return p
}

// State says how usable a Result is.
type State uint8

// The States of a Result. The zero State marks the empty Result that Get
// returns with its context's error when it gives up waiting.
const (
	Fresh    State = iota + 1 // loaded less than TTL ago
	Stale                     // past TTL, served under StaleWhileRevalidate or StaleIfError
	Negative                  // a load's error
)

func (s State) String() string {
	switch s {
	case Fresh:
		return "fresh"
	case Stale:
		return "stale"
	case Negative:
		return "negative"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Result is what Get answers with.
type Result[V any] struct {
	Value    V
	Err      error     // the load's error, when State is Negative
	LoadedAt time.Time // when the load behind Value (or Err) returned
	// Age is how long before Get returned the load behind Value (or Err)
	// returned, by the Results' clock: what an HTTP Age header says.
	Age   time.Duration
	State State

	// Shared and Loaded say whose load this Get waited for: another
	// caller's, or one it started. A Get that did not wait (a hit, a
	// stale value served at once, a cached error) has neither, even when
	// it started a background refresh.
	Shared bool
	Loaded bool

	// Until, set by Peek, is when the clock alone makes Peek answer
	// otherwise for the key under the same Policy (the end of its TTL, of
	// its NegativeTTL, or of the pause after a failed refresh); zero when
	// only a load's end does (one is running). Loads ending, and
	// Invalidate, change Generation.
	Until time.Time
}

// LoadPanicError is the error of a load that panicked or called
// runtime.Goexit. Get recovers it so that the key is not left with a load
// that never ends: its waiters get this error, and it is cached like any
// other load error.
type LoadPanicError struct {
	Value any    // what the load panicked with; nil after runtime.Goexit
	Stack []byte // the load's goroutine stack where it panicked
}

func (e *LoadPanicError) Error() string {
	if e.Value == nil {
		return "cache: load exited without returning"
	}
	return fmt.Sprintf("cache: load panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *LoadPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ResultStats counts what a Results did since it was made. Every Get counts
// once in exactly one of Hits, StaleHits, NegativeHits and Misses.
type ResultStats struct {
	Hits         uint64 // fresh values served without loading
	StaleHits    uint64 // stale values served at once
	NegativeHits uint64 // cached errors served
	Misses       uint64 // Gets that waited for a load (started or joined)
	SharedWaits  uint64 // Misses that joined a load another caller started
	Loads        uint64 // loads started, background refreshes included
	LoadErrors   uint64 // loads that returned an error or panicked
	Evictions    uint64 // entries dropped to stay within maxEntries
}

// Results is a bounded cache of load results, one per key, for values
// that are costly to get and that many callers want at once (a game
// server's state, fetched over UDP for every HTTP client asking). While a
// key stays cached, at most one load for it runs at a time (a key evicted
// or invalidated while its load runs may start a second one: the cache no
// longer tracks the first, whose waiters still get its outcome). It
// serves stale values while
// refreshing or when a refresh fails, caches errors, and keeps at most
// maxEntries keys, dropping the least recently used even if its load is
// still running (its waiters get the outcome; the cache does not keep
// it). Make it with NewResults; it is safe for concurrent use.
type Results[K comparable, V any] struct {
	max   int
	clock func() time.Time

	mu      sync.Mutex
	entries map[K]*entry[K, V]
	lru     entry[K, V] // sentinel: lru.next is the most recently used entry

	hits, staleHits, negativeHits, misses atomic.Uint64
	sharedWaits, loads, loadErrors        atomic.Uint64
	evictions                             atomic.Uint64
	// generation counts the loads finished and the keys dropped: the
	// changes of what Peek answers that the clock does not make.
	generation atomic.Uint64

	// life ends when Close is called; every load's context ends with it.
	life  context.Context
	close context.CancelFunc

	// loadDone, when set (by tests, before first use), runs after each
	// load's outcome is stored and its waiters released.
	loadDone func()
}

// entry is one key's cached outcome and its load in flight, if any.
type entry[K comparable, V any] struct {
	key        K
	prev, next *entry[K, V]

	loaded   bool // value or err holds a load's outcome
	value    V
	err      error     // non-nil: a negative entry
	loadedAt time.Time // when the outcome's load returned
	failedAt time.Time // when a refresh of value last failed; zero if none since it loaded

	flight *flight[V]
}

// flight is one running load. res is written once, before done is closed.
type flight[V any] struct {
	done chan struct{}
	res  Result[V]
}

// ErrClosed is the error of a load that Close ended, or that started after
// Close (then load is not called).
var ErrClosed = errors.New("cache: closed")

// Uncached marks a load's error as one that says nothing about the key (the
// caller had no capacity to ask, say): the load's waiters get err, but the
// cache keeps what it had (a value stays, nothing else is stored), so the
// next Get loads again. A waiter within StaleIfError of a value gets
// the value, as after any failed refresh. errors.Is and errors.As see
// through the mark.
func Uncached(err error) error {
	if err == nil {
		return nil
	}
	return uncached{err}
}

type uncached struct{ error }

func (e uncached) Unwrap() error { return e.error }

// ErrMaxEntries is NewResults' error for a bound below 1.
var ErrMaxEntries = errors.New("cache: a result cache must hold at least 1 entry")

// NewResults returns an empty cache holding at most maxEntries keys, which
// must be at least 1. Its notion of time, for freshness only, comes from
// clock; nil means time.Now.
func NewResults[K comparable, V any](maxEntries int, clock func() time.Time) (*Results[K, V], error) {
	if maxEntries < 1 {
		return nil, ErrMaxEntries
	}
	if clock == nil {
		clock = time.Now
	}
	r := &Results[K, V]{
		max:     maxEntries,
		clock:   clock,
		entries: make(map[K]*entry[K, V], min(maxEntries, 1024)),
	}
	r.lru.next, r.lru.prev = &r.lru, &r.lru
	r.life, r.close = context.WithCancel(context.Background())
	return r, nil
}

// Close ends the cache's loads: the context of every load running is
// cancelled, and a load Get would start later is not started. Either
// yields ErrClosed to its waiters (a Negative result, cached as usual).
// Values already cached are still served. Close is for the owner that
// stops using the cache (a configuration being unloaded): loads are
// detached from their callers, so nothing else would end them before
// Policy.LoadTimeout. Calling it again does nothing.
func (r *Results[K, V]) Close() { r.close() }

// Get returns the value for key, loading it with load when the cache has
// nothing usable under p. However many goroutines ask, one load runs for
// the cached key and the others wait for it (see Results on eviction).
//
// load runs in its own goroutine with a context that carries ctx's values
// but not its cancellation or deadline, so that a caller giving up does not
// fail the load others wait for; p.LoadTimeout, if set, bounds it, and
// Close cancels it. A Get
// whose ctx ends while it waits returns ctx.Err() at once; the load goes on
// and its outcome is cached.
//
// The error is non-nil only for a Negative result (then it equals
// Result.Err) or when ctx ended. A load that panics yields a
// *LoadPanicError.
//
// A hit allocates nothing. load escapes (it may run in another goroutine),
// so a closure built for every call costs its caller an allocation; where
// that matters, pass a func built once.
func (r *Results[K, V]) Get(ctx context.Context, key K, p Policy, load func(context.Context) (V, error)) (Result[V], error) {
	p = p.clamped()
	now := r.clock()
	r.mu.Lock()
	e := r.entries[key]
	if e == nil {
		e = r.add(key)
	} else {
		r.touch(e)
	}
	if e.loaded {
		age := now.Sub(e.loadedAt)
		switch {
		case e.err != nil:
			if age < p.NegativeTTL {
				res := Result[V]{Err: e.err, LoadedAt: e.loadedAt, Age: age, State: Negative}
				r.mu.Unlock()
				r.negativeHits.Add(1)
				return res, res.Err
			}
		case age < p.TTL:
			res := Result[V]{Value: e.value, LoadedAt: e.loadedAt, Age: age, State: Fresh}
			r.mu.Unlock()
			r.hits.Add(1)
			return res, nil
		case age-p.TTL < p.StaleWhileRevalidate ||
			!e.failedAt.IsZero() && age-p.TTL < p.StaleIfError:
			if e.flight == nil && (e.failedAt.IsZero() || now.Sub(e.failedAt) >= p.NegativeTTL) {
				r.start(ctx, e, p, load)
			}
			res := Result[V]{Value: e.value, LoadedAt: e.loadedAt, Age: age, State: Stale}
			r.mu.Unlock()
			r.staleHits.Add(1)
			return res, nil
		}
	}
	f, started := e.flight, false
	if f == nil {
		f, started = r.start(ctx, e, p, load), true
	}
	r.mu.Unlock()
	r.misses.Add(1)
	if !started {
		r.sharedWaits.Add(1)
	}

	select {
	case <-f.done:
	case <-ctx.Done():
		return Result[V]{}, ctx.Err()
	}
	res := f.res
	res.Loaded, res.Shared = started, !started
	res.Age = r.clock().Sub(res.LoadedAt)
	if res.State == Negative {
		return res, res.Err
	}
	return res, nil
}

// Peek returns what Get would answer at once for key under p without
// starting a load: a fresh value, a cached error within NegativeTTL, or a
// stale value Get would serve while a refresh runs or after one failed
// within NegativeTTL. ok is false otherwise (nothing cached, a value past
// TTL that Get would load or refresh); Peek then does neither and adds no
// entry, so that a caller may decide whether a load is worth starting.
// loading reports that a load for key is running (a Get would wait for it
// rather than start one). A Peek that answers counts as a hit.
func (r *Results[K, V]) Peek(key K, p Policy) (res Result[V], ok, loading bool) {
	p = p.clamped()
	now := r.clock()
	r.mu.Lock()
	e := r.entries[key]
	if e == nil {
		r.mu.Unlock()
		return res, false, false
	}
	loading = e.flight != nil
	age := now.Sub(e.loadedAt)
	switch {
	case !e.loaded:
		r.mu.Unlock()
		return res, false, loading
	case e.err != nil && age < p.NegativeTTL:
		res = Result[V]{Err: e.err, LoadedAt: e.loadedAt, State: Negative, Until: e.loadedAt.Add(p.NegativeTTL)}
	case e.err == nil && age < p.TTL:
		res = Result[V]{Value: e.value, LoadedAt: e.loadedAt, State: Fresh, Until: e.loadedAt.Add(p.TTL)}
	case e.err == nil && (age-p.TTL < p.StaleWhileRevalidate || !e.failedAt.IsZero() && age-p.TTL < p.StaleIfError) &&
		(loading || !e.failedAt.IsZero() && now.Sub(e.failedAt) < p.NegativeTTL):
		// Get would serve it as it is and start nothing.
		res = Result[V]{Value: e.value, LoadedAt: e.loadedAt, State: Stale}
		if !loading {
			res.Until = e.failedAt.Add(p.NegativeTTL)
			if end := e.loadedAt.Add(p.TTL + max(p.StaleWhileRevalidate, p.StaleIfError)); end.Before(res.Until) {
				res.Until = end
			}
		}
	default:
		r.mu.Unlock()
		return res, false, loading
	}
	res.Age = age
	r.touch(e)
	r.mu.Unlock()
	switch res.State {
	case Negative:
		r.negativeHits.Add(1)
	case Stale:
		r.staleHits.Add(1)
	default:
		r.hits.Add(1)
	}
	return res, true, loading
}

// Invalidate drops key's cached outcome: the next Get loads anew. A load
// already running still answers its waiters, but its outcome is not cached.
func (r *Results[K, V]) Invalidate(key K) {
	r.mu.Lock()
	if e := r.entries[key]; e != nil {
		r.remove(e)
	}
	r.mu.Unlock()
}

// Generation changes whenever what Peek answers may change other than by
// the clock (see Result.Until): a load ended (its outcome stored or not),
// a key was invalidated or evicted. A caller that read it before it
// peeked may keep what it made of the answers while it is unchanged.
func (r *Results[K, V]) Generation() uint64 { return r.generation.Load() }

// Len is the number of keys held, including those whose first load is
// still running.
func (r *Results[K, V]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// Stats returns the counters. Each is read atomically, the set is not: a
// Get running meanwhile may show in one counter and not yet in another.
func (r *Results[K, V]) Stats() ResultStats {
	return ResultStats{
		Hits:         r.hits.Load(),
		StaleHits:    r.staleHits.Load(),
		NegativeHits: r.negativeHits.Load(),
		Misses:       r.misses.Load(),
		SharedWaits:  r.sharedWaits.Load(),
		Loads:        r.loads.Load(),
		LoadErrors:   r.loadErrors.Load(),
		Evictions:    r.evictions.Load(),
	}
}

// start runs load for e in a new goroutine. r.mu is held.
func (r *Results[K, V]) start(ctx context.Context, e *entry[K, V], p Policy, load func(context.Context) (V, error)) *flight[V] {
	f := &flight[V]{done: make(chan struct{})}
	e.flight = f
	r.loads.Add(1)
	go r.run(context.WithoutCancel(ctx), e, f, p, load)
	return f
}

// run calls load and stores its outcome, whether load returns, panics or
// exits its goroutine.
func (r *Results[K, V]) run(ctx context.Context, e *entry[K, V], f *flight[V], p Policy, load func(context.Context) (V, error)) {
	var (
		v        V
		err      error
		returned bool
	)
	defer func() {
		if !returned {
			err = &LoadPanicError{Value: recover(), Stack: debug.Stack()}
		}
		r.finish(e, f, p, v, err)
	}()
	if r.life.Err() != nil {
		err, returned = ErrClosed, true
		return
	}
	var cancel context.CancelFunc
	if p.LoadTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, p.LoadTimeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	defer context.AfterFunc(r.life, cancel)()
	v, err = load(ctx)
	if err != nil && r.life.Err() != nil {
		err = ErrClosed // whatever the load made of its cancelled context
	}
	returned = true
}

// finish stores a load's outcome in e, unless e was evicted or invalidated
// meanwhile, and releases the load's waiters.
func (r *Results[K, V]) finish(e *entry[K, V], f *flight[V], p Policy, v V, err error) {
	now := r.clock()
	r.mu.Lock()
	current := e.flight == f && r.entries[e.key] == e
	if current {
		e.flight = nil
	}
	var skip uncached
	transient := errors.As(err, &skip)
	if transient {
		err = skip.error
	}
	switch {
	case err == nil:
		f.res = Result[V]{Value: v, LoadedAt: now, State: Fresh}
		if current {
			e.loaded, e.value, e.err, e.loadedAt, e.failedAt = true, v, nil, now, time.Time{}
		}
	case transient && current && e.loaded && e.err == nil && now.Sub(e.loadedAt)-p.TTL < p.StaleIfError:
		f.res = Result[V]{Value: e.value, LoadedAt: e.loadedAt, State: Stale}
	case transient:
		f.res = Result[V]{Err: err, LoadedAt: now, State: Negative}
		if current && !e.loaded {
			r.remove(e) // nothing to keep; the next Get loads
		}
	case current && e.loaded && e.err == nil && now.Sub(e.loadedAt)-p.TTL < p.StaleIfError:
		// Keep the good value; the error only delays the next refresh.
		e.failedAt = now
		f.res = Result[V]{Value: e.value, LoadedAt: e.loadedAt, State: Stale}
	default:
		f.res = Result[V]{Err: err, LoadedAt: now, State: Negative}
		if !current {
			break
		}
		if p.NegativeTTL > 0 {
			var zero V
			e.loaded, e.value, e.err, e.loadedAt, e.failedAt = true, zero, err, now, time.Time{}
		} else {
			r.remove(e) // nothing worth keeping
		}
	}
	r.generation.Add(1) // after the outcome is stored
	r.mu.Unlock()
	if err != nil {
		r.loadErrors.Add(1)
	}
	close(f.done)
	if r.loadDone != nil {
		r.loadDone()
	}
}

// add inserts a new, most recently used entry for key, evicting the least
// recently used one when full. An evicted entry's load goes on for its
// waiters; its outcome is not cached. r.mu is held.
func (r *Results[K, V]) add(key K) *entry[K, V] {
	if len(r.entries) >= r.max {
		r.remove(r.lru.prev)
		r.evictions.Add(1)
	}
	e := &entry[K, V]{key: key}
	r.entries[key] = e
	r.linkFront(e)
	return e
}

// touch marks e as the most recently used. r.mu is held.
func (r *Results[K, V]) touch(e *entry[K, V]) {
	if r.lru.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	r.linkFront(e)
}

func (r *Results[K, V]) linkFront(e *entry[K, V]) {
	e.prev, e.next = &r.lru, r.lru.next
	e.next.prev = e
	r.lru.next = e
}

// remove drops e from the map and the LRU list. r.mu is held.
func (r *Results[K, V]) remove(e *entry[K, V]) {
	r.generation.Add(1)
	delete(r.entries, e.key)
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
