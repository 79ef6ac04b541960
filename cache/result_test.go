package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testResults is a Results on a manual clock that counts finished loads.
type testResults struct {
	*Results[string, string]
	clock    *testutil.Clock
	finished atomic.Uint64
}

func newTestResults(maxEntries int) *testResults {
	tr := &testResults{clock: testutil.NewClock(t0)}
	r, err := NewResults[string, string](maxEntries, tr.clock.Now)
	if err != nil {
		panic(err)
	}
	tr.Results = r
	tr.loadDone = func() { tr.finished.Add(1) }
	return tr
}

// countingLoad returns a load answering "v1", "v2", … by call number, and
// its call counter. Calls numbered in block wait for release first; a
// call for which fail reports true returns errDown.
func countingLoad(release <-chan struct{}, block func(n int64) bool, fail *atomic.Bool) (func(context.Context) (string, error), *atomic.Int64) {
	var calls atomic.Int64
	return func(context.Context) (string, error) {
		n := calls.Add(1)
		if block != nil && block(n) {
			<-release
		}
		if fail != nil && fail.Load() {
			return "", errDown
		}
		return fmt.Sprint("v", n), nil
	}, &calls
}

var errDown = errors.New("server down")

func checkResult(t *testing.T, what string, res Result[string], err error, want Result[string], wantErr error) {
	t.Helper()
	if !errors.Is(err, wantErr) {
		t.Fatalf("%s: got error %v, want %v", what, err, wantErr)
	}
	if res.Value != want.Value || res.State != want.State || !res.LoadedAt.Equal(want.LoadedAt) ||
		res.Loaded != want.Loaded || res.Shared != want.Shared || !errors.Is(res.Err, want.Err) {
		t.Fatalf("%s: got %+v, want %+v", what, res, want)
	}
}

// checkStats compares the counters and that every Get counted once.
func checkStats(t *testing.T, r *testResults, gets uint64, want ResultStats) {
	t.Helper()
	got := r.Stats()
	if got != want {
		t.Fatalf("stats: got %+v, want %+v", got, want)
	}
	if sum := got.Hits + got.StaleHits + got.NegativeHits + got.Misses; sum != gets {
		t.Fatalf("stats: hits, stale hits, negative hits and misses add up to %d, want %d Gets", sum, gets)
	}
}

func TestResultsHitAndMiss(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Second}
	load, calls := countingLoad(nil, nil, nil)
	ctx := t.Context()

	res, err := r.Get(ctx, "a", p, load)
	checkResult(t, "miss", res, err, Result[string]{Value: "v1", LoadedAt: t0, State: Fresh, Loaded: true}, nil)
	r.clock.Advance(999 * time.Millisecond)
	res, err = r.Get(ctx, "a", p, load)
	checkResult(t, "hit", res, err, Result[string]{Value: "v1", LoadedAt: t0, State: Fresh}, nil)
	r.clock.Advance(time.Millisecond) // now exactly TTL old: no longer fresh
	res, err = r.Get(ctx, "a", p, load)
	checkResult(t, "expired", res, err, Result[string]{Value: "v2", LoadedAt: t0.Add(time.Second), State: Fresh, Loaded: true}, nil)
	if n := calls.Load(); n != 2 {
		t.Fatalf("loads: got %d, want 2", n)
	}
	checkStats(t, r, 3, ResultStats{Hits: 1, Misses: 2, Loads: 2})
	if r.Len() != 1 {
		t.Fatalf("Len: got %d, want 1", r.Len())
	}
}

func TestResultsSingleFlight(t *testing.T) {
	const n = 200
	r := newTestResults(10)
	p := Policy{TTL: time.Minute}
	release := make(chan struct{})
	load, calls := countingLoad(release, func(int64) bool { return true }, nil)

	getAll := func() []Result[string] {
		results := make([]Result[string], n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var err error
				if results[i], err = r.Get(context.Background(), "srv", p, load); err != nil {
					t.Errorf("Get %d: %v", i, err)
				}
			})
		}
		// Every Get has joined the load before it may return.
		testutil.WaitFor(t, "all Gets to wait", func() bool { return r.Stats().Misses >= n })
		close(release)
		wg.Wait()
		return results
	}

	results := getAll()
	if got := calls.Load(); got != 1 {
		t.Fatalf("cold key, %d concurrent Gets: got %d loads, want 1", n, got)
	}
	var loaded, shared int
	for i, res := range results {
		if res.Value != "v1" || res.State != Fresh {
			t.Fatalf("Get %d: got %+v, want v1, fresh", i, res)
		}
		if res.Loaded {
			loaded++
		}
		if res.Shared {
			shared++
		}
	}
	if loaded != 1 || shared != n-1 {
		t.Fatalf("got %d Loaded and %d Shared, want 1 and %d", loaded, shared, n-1)
	}
	checkStats(t, r, n, ResultStats{Misses: n, SharedWaits: n - 1, Loads: 1})

	// After TTL, however many ask, exactly one more load.
	// (release is closed: this load returns at once.)
	r.clock.Advance(time.Minute)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if res, err := r.Get(context.Background(), "srv", p, load); err != nil || res.Value != "v2" {
				t.Errorf("after TTL: got %+v, %v, want v2", res, err)
			}
		})
	}
	wg.Wait()
	if got := calls.Load(); got != 2 {
		t.Fatalf("after TTL: got %d loads in all, want 2", got)
	}
}

type ctxKey struct{}

func TestResultsWaiterGivesUp(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Minute}
	release := make(chan struct{})
	loadCtx := make(chan context.Context, 1)
	loadErr := make(chan error, 1) // the load's context's error while it runs
	load := func(ctx context.Context) (string, error) {
		<-release
		loadCtx <- ctx
		loadErr <- ctx.Err()
		return "state", nil
	}

	ctx, cancel := context.WithDeadline(context.WithValue(context.Background(), ctxKey{}, "request-id"), time.Now().Add(time.Hour))
	first := make(chan error, 1)
	go func() {
		_, err := r.Get(ctx, "srv", p, load)
		first <- err
	}()
	testutil.WaitFor(t, "the first Get to wait", func() bool { return r.Stats().Misses == 1 })
	second := make(chan Result[string], 1)
	go func() {
		res, _ := r.Get(context.Background(), "srv", p, load)
		second <- res
	}()
	testutil.WaitFor(t, "the second Get to wait", func() bool { return r.Stats().SharedWaits == 1 })

	cancel()
	// The load is still blocked: the first Get returns on its own.
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: got %v, want %v", err, context.Canceled)
	}
	close(release)
	if res := <-second; res.Value != "state" || !res.Shared || res.Loaded {
		t.Fatalf("other waiter: got %+v, want the load's value, shared", res)
	}
	lctx := <-loadCtx
	if err := <-loadErr; err != nil {
		t.Fatalf("load context: got %v, want not cancelled with its starter", err)
	}
	if _, ok := lctx.Deadline(); ok {
		t.Fatal("load context: got the caller's deadline, want none")
	}
	if v := lctx.Value(ctxKey{}); v != "request-id" {
		t.Fatalf("load context value: got %v, want request-id", v)
	}
	// The abandoned load's value was cached.
	res, err := r.Get(context.Background(), "srv", p, load)
	checkResult(t, "after", res, err, Result[string]{Value: "state", LoadedAt: t0, State: Fresh}, nil)
	checkStats(t, r, 3, ResultStats{Hits: 1, Misses: 2, SharedWaits: 1, Loads: 1})
}

// Close ends the loads the callers left running, and no load starts after
// it; what was cached is still served.
func TestResultsClose(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Minute, NegativeTTL: time.Minute}
	if _, err := r.Get(t.Context(), "cached", p, func(context.Context) (string, error) { return "kept", nil }); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	ended := make(chan error, 1)
	slow := func(ctx context.Context) (string, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return "", ctx.Err()
	}
	gotten := make(chan error, 1)
	go func() {
		_, err := r.Get(t.Context(), "slow", p, slow)
		gotten <- err
	}()
	<-started
	r.Close()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("running load's context after Close: got %v, want %v", err, context.Canceled)
	}
	if err := <-gotten; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiter of the load Close ended: got %v, want %v", err, ErrClosed)
	}
	var calls atomic.Int64
	res, err := r.Get(t.Context(), "new", p, func(context.Context) (string, error) { calls.Add(1); return "v", nil })
	checkResult(t, "Get after Close", res, err, Result[string]{Err: ErrClosed, LoadedAt: t0, State: Negative, Loaded: true}, ErrClosed)
	if n := calls.Load(); n != 0 {
		t.Fatalf("loads called after Close: got %d, want 0", n)
	}
	res, err = r.Get(t.Context(), "cached", p, slow)
	checkResult(t, "cached before Close", res, err, Result[string]{Value: "kept", LoadedAt: t0, State: Fresh}, nil)
	r.Close() // again: nothing
}

func TestResultsLoadTimeout(t *testing.T) {
	tests := []struct {
		name         string
		timeout      time.Duration
		wantDeadline bool
	}{
		{"none", 0, false},
		{"set", time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestResults(10)
			var hasDeadline bool
			load := func(ctx context.Context) (string, error) {
				_, hasDeadline = ctx.Deadline()
				return "", nil
			}
			if _, err := r.Get(t.Context(), "srv", Policy{LoadTimeout: tt.timeout}, load); err != nil {
				t.Fatal(err)
			}
			if hasDeadline != tt.wantDeadline {
				t.Fatalf("load context has a deadline: got %v, want %v", hasDeadline, tt.wantDeadline)
			}
		})
	}
}

func TestResultsStaleWhileRevalidate(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: 10 * time.Second, StaleWhileRevalidate: 20 * time.Second}
	release := make(chan struct{})
	load, calls := countingLoad(release, func(n int64) bool { return n > 1 }, nil)
	ctx := t.Context()

	if _, err := r.Get(ctx, "srv", p, load); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(15 * time.Second)
	// The refresh is blocked, so these Gets could not have waited for it.
	const n = 50
	for i := range n {
		res, err := r.Get(ctx, "srv", p, load)
		checkResult(t, fmt.Sprint("stale Get ", i), res, err, Result[string]{Value: "v1", LoadedAt: t0, State: Stale}, nil)
	}
	checkStats(t, r, n+1, ResultStats{StaleHits: n, Misses: 1, Loads: 2})
	close(release)
	testutil.WaitFor(t, "the refresh", func() bool { return r.finished.Load() == 2 })
	res, err := r.Get(ctx, "srv", p, load)
	checkResult(t, "refreshed", res, err, Result[string]{Value: "v2", LoadedAt: t0.Add(15 * time.Second), State: Fresh}, nil)
	if got := calls.Load(); got != 2 {
		t.Fatalf("loads: got %d, want 2", got)
	}
}

func TestResultsPastStaleWindowWaits(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: 10 * time.Second, StaleWhileRevalidate: 5 * time.Second}
	release := make(chan struct{})
	load, _ := countingLoad(release, func(n int64) bool { return n > 1 }, nil)

	if _, err := r.Get(t.Context(), "srv", p, load); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(15 * time.Second) // exactly TTL+SWR: too old to serve
	got := make(chan Result[string], 1)
	go func() {
		res, _ := r.Get(context.Background(), "srv", p, load)
		got <- res
	}()
	testutil.WaitFor(t, "the Get to wait", func() bool { return r.Stats().Misses == 2 })
	select {
	case res := <-got:
		t.Fatalf("got %+v before the refresh ended, want a wait", res)
	default:
	}
	close(release)
	if res := <-got; res.Value != "v2" || res.State != Fresh || !res.Loaded {
		t.Fatalf("got %+v, want v2, fresh, loaded", res)
	}
}

func TestResultsStaleIfError(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: 10 * time.Second, StaleIfError: time.Minute, NegativeTTL: 5 * time.Second}
	var fail atomic.Bool
	load, _ := countingLoad(nil, nil, &fail)
	ctx := t.Context()
	gets := uint64(0)
	get := func() (Result[string], error) {
		gets++
		return r.Get(ctx, "srv", p, load)
	}
	stale := Result[string]{Value: "v1", LoadedAt: t0, State: Stale}

	if _, err := get(); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	r.clock.Advance(10 * time.Second)
	res, err := get()
	want := stale
	want.Loaded = true
	checkResult(t, "failed refresh", res, err, want, nil)
	checkStats(t, r, gets, ResultStats{Misses: 2, Loads: 2, LoadErrors: 1})

	// Within NegativeTTL of the failure: stale at once, no retry.
	res, err = get()
	checkResult(t, "just after the failure", res, err, stale, nil)
	r.clock.Advance(4 * time.Second)
	res, err = get()
	checkResult(t, "4s after the failure", res, err, stale, nil)
	checkStats(t, r, gets, ResultStats{StaleHits: 2, Misses: 2, Loads: 2, LoadErrors: 1})

	// NegativeTTL after it: stale at once, one retry in the background.
	r.clock.Advance(time.Second)
	res, err = get()
	checkResult(t, "retry due", res, err, stale, nil)
	testutil.WaitFor(t, "the retry", func() bool { return r.finished.Load() == 3 })
	res, err = get()
	checkResult(t, "retry failed", res, err, stale, nil)
	checkStats(t, r, gets, ResultStats{StaleHits: 4, Misses: 2, Loads: 3, LoadErrors: 2})

	// The server is back: the next retry replaces the stale value.
	fail.Store(false)
	r.clock.Advance(5 * time.Second)
	res, err = get()
	checkResult(t, "retry due again", res, err, stale, nil)
	testutil.WaitFor(t, "the second retry", func() bool { return r.finished.Load() == 4 })
	res, err = get()
	checkResult(t, "recovered", res, err, Result[string]{Value: "v4", LoadedAt: t0.Add(20 * time.Second), State: Fresh}, nil)

	// Past TTL+StaleIfError there is nothing to fall back on.
	fail.Store(true)
	r.clock.Advance(70 * time.Second)
	res, err = get()
	checkResult(t, "too old", res, err, Result[string]{Err: errDown, LoadedAt: t0.Add(90 * time.Second), State: Negative, Loaded: true}, errDown)
	res, err = get()
	checkResult(t, "cached error", res, err, Result[string]{Err: errDown, LoadedAt: t0.Add(90 * time.Second), State: Negative}, errDown)
	checkStats(t, r, gets, ResultStats{Hits: 1, StaleHits: 5, NegativeHits: 1, Misses: 3, Loads: 5, LoadErrors: 3})
}

func TestResultsNegative(t *testing.T) {
	tests := []struct {
		name        string
		negativeTTL time.Duration
		wantLoads   int64 // after a failed Get, one 4s later and one 5s later
		wantLen     int
	}{
		{"cached", 5 * time.Second, 2, 1},
		{"not cached", 0, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestResults(10)
			p := Policy{TTL: time.Minute, NegativeTTL: tt.negativeTTL}
			var fail atomic.Bool
			fail.Store(true)
			load, calls := countingLoad(nil, nil, &fail)

			res, err := r.Get(t.Context(), "srv", p, load)
			checkResult(t, "first", res, err, Result[string]{Err: errDown, LoadedAt: t0, State: Negative, Loaded: true}, errDown)
			r.clock.Advance(4 * time.Second)
			res, err = r.Get(t.Context(), "srv", p, load)
			if !errors.Is(err, errDown) || res.State != Negative || res.Err != err {
				t.Fatalf("within NegativeTTL: got %+v, %v, want the error, negative", res, err)
			}
			if r.Len() != tt.wantLen {
				t.Fatalf("Len: got %d, want %d", r.Len(), tt.wantLen)
			}
			r.clock.Advance(time.Second)
			fail.Store(false)
			res, err = r.Get(t.Context(), "srv", p, load)
			if err != nil || res.State != Fresh {
				t.Fatalf("after NegativeTTL: got %+v, %v, want a fresh value", res, err)
			}
			if got := calls.Load(); got != tt.wantLoads {
				t.Fatalf("loads: got %d, want %d", got, tt.wantLoads)
			}
		})
	}
}

func TestResultsEvictsLeastRecentlyUsed(t *testing.T) {
	r := newTestResults(3)
	p := Policy{TTL: time.Minute}
	load := func(context.Context) (string, error) { return "v", nil }
	get := func(key string) {
		t.Helper()
		if _, err := r.Get(t.Context(), key, p, load); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c", "a", "d"} {
		get(k)
	}
	if r.Len() != 3 {
		t.Fatalf("Len: got %d, want 3", r.Len())
	}
	for _, k := range []string{"a", "c", "d"} {
		get(k)
	}
	if s := r.Stats(); s.Loads != 4 || s.Evictions != 1 {
		t.Fatalf("a, c and d kept: got %+v, want 4 loads, 1 eviction", s)
	}
	get("b") // evicted: loads again, and evicts a
	get("a")
	if s := r.Stats(); s.Loads != 6 || s.Evictions != 3 {
		t.Fatalf("b evicted: got %+v, want 6 loads, 3 evictions", s)
	}
}

func TestResultsBoundedUnderKeyFlood(t *testing.T) {
	const maxEntries, keys = 64, 10000
	r := newTestResults(maxEntries)
	p := Policy{TTL: time.Minute, NegativeTTL: time.Minute}
	load := func(context.Context) (string, error) { return "", errDown }
	for i := range keys {
		r.Get(t.Context(), fmt.Sprint("key", i), p, load)
		if r.Len() > maxEntries {
			t.Fatalf("after %d keys: Len %d, want at most %d", i+1, r.Len(), maxEntries)
		}
	}
	if s := r.Stats(); s.Evictions != keys-maxEntries {
		t.Fatalf("evictions: got %d, want %d", s.Evictions, keys-maxEntries)
	}
}

func TestResultsEvictedMidFlight(t *testing.T) {
	r := newTestResults(1)
	p := Policy{TTL: time.Minute}
	release := make(chan struct{})
	slow, _ := countingLoad(release, func(int64) bool { return true }, nil)
	fast := func(context.Context) (string, error) { return "b", nil }

	got := make(chan Result[string], 1)
	go func() {
		res, _ := r.Get(context.Background(), "a", p, slow)
		got <- res
	}()
	testutil.WaitFor(t, "a's load", func() bool { return r.Stats().Misses == 1 })
	if _, err := r.Get(t.Context(), "b", p, fast); err != nil {
		t.Fatal(err)
	}
	if s := r.Stats(); s.Evictions != 1 || r.Len() != 1 {
		t.Fatalf("got %d evictions and %d keys, want 1 and 1", s.Evictions, r.Len())
	}
	close(release)
	if res := <-got; res.Value != "v1" || res.State != Fresh {
		t.Fatalf("evicted key's waiter: got %+v, want v1, fresh", res)
	}
	// The evicted key's outcome was not cached over b.
	if res, _ := r.Get(t.Context(), "b", p, fast); res.Loaded {
		t.Fatalf("b: got %+v, want a hit", res)
	}
}

func TestResultsInvalidate(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Minute}
	release := make(chan struct{})
	load, calls := countingLoad(release, func(n int64) bool { return n == 2 }, nil)

	r.Get(t.Context(), "srv", p, load)
	r.Invalidate("srv")
	r.Invalidate("unknown")
	if r.Len() != 0 {
		t.Fatalf("Len: got %d, want 0", r.Len())
	}

	// Invalidated while its load runs: the waiter gets the value, the
	// cache does not keep it.
	got := make(chan Result[string], 1)
	go func() {
		res, _ := r.Get(context.Background(), "srv", p, load)
		got <- res
	}()
	testutil.WaitFor(t, "the load", func() bool { return r.Stats().Misses == 2 })
	r.Invalidate("srv")
	close(release)
	if res := <-got; res.Value != "v2" {
		t.Fatalf("waiter: got %+v, want v2", res)
	}
	res, err := r.Get(t.Context(), "srv", p, load)
	if err != nil || res.Value != "v3" || !res.Loaded {
		t.Fatalf("after invalidation: got %+v, %v, want v3 loaded anew", res, err)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("loads: got %d, want 3", got)
	}
}

func TestResultsLoadPanics(t *testing.T) {
	tests := []struct {
		name      string
		fail      func()
		wantValue any
		wantMsg   string
	}{
		{"panic", func() { panic("boom") }, "boom", "load panicked: boom"},
		{"panic with error", func() { panic(errDown) }, errDown, "load panicked: server down"},
		{"goexit", runtime.Goexit, nil, "load exited without returning"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestResults(10)
			p := Policy{TTL: time.Minute, NegativeTTL: 5 * time.Second}
			release := make(chan struct{})
			var calls atomic.Int64
			load := func(context.Context) (string, error) {
				if calls.Add(1) == 1 {
					<-release
					tt.fail()
				}
				return "ok", nil
			}

			errs := make(chan error, 2)
			for range 2 {
				go func() {
					_, err := r.Get(context.Background(), "srv", p, load)
					errs <- err
				}()
			}
			testutil.WaitFor(t, "both Gets to wait", func() bool { return r.Stats().Misses == 2 })
			close(release)
			for range 2 {
				var pe *LoadPanicError
				if err := <-errs; !errors.As(err, &pe) {
					t.Fatalf("waiter: got %v, want a *LoadPanicError", err)
				}
				if pe.Value != tt.wantValue || !strings.Contains(pe.Error(), tt.wantMsg) {
					t.Fatalf("got value %v and message %q, want %v and %q", pe.Value, pe.Error(), tt.wantValue, tt.wantMsg)
				}
				if len(pe.Stack) == 0 {
					t.Fatal("got no stack")
				}
				if err, _ := tt.wantValue.(error); err != nil && !errors.Is(pe, err) {
					t.Fatalf("errors.Is(%v, %v): got false, want true", pe, err)
				}
			}
			// Cached as negative, then the key loads again.
			res, err := r.Get(t.Context(), "srv", p, load)
			if res.State != Negative || err == nil || calls.Load() != 1 {
				t.Fatalf("within NegativeTTL: got %+v, %v after %d loads, want the cached error", res, err, calls.Load())
			}
			r.clock.Advance(5 * time.Second)
			if res, err := r.Get(t.Context(), "srv", p, load); err != nil || res.Value != "ok" {
				t.Fatalf("after NegativeTTL: got %+v, %v, want ok", res, err)
			}
		})
	}
}

func TestResultsHitAllocatesNothing(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Minute}
	load := func(context.Context) (string, error) { return "v", nil }
	ctx := t.Context()
	if _, err := r.Get(ctx, "srv", p, load); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { r.Get(ctx, "srv", p, load) }); n != 0 {
		t.Fatalf("got %v allocations per hit, want 0", n)
	}
}

func TestStateString(t *testing.T) {
	tests := []struct {
		s    State
		want string
	}{
		{Fresh, "fresh"},
		{Stale, "stale"},
		{Negative, "negative"},
		{0, "State(0)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("got %s, want %s", got, tt.want)
		}
	}
}

func TestNewResultsRejectsNoRoom(t *testing.T) {
	for _, n := range []int{0, -3} {
		if r, err := NewResults[string, int](n, nil); !errors.Is(err, ErrMaxEntries) || r != nil {
			t.Errorf("NewResults(%d, nil): got %v, %v, want nil, ErrMaxEntries", n, r, err)
		}
	}
}

func mustResults[V any](tb testing.TB, n int, clock func() time.Time) *Results[string, V] {
	tb.Helper()
	r, err := NewResults[string, V](n, clock)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func BenchmarkResultsHit(b *testing.B) {
	r := mustResults[[]byte](b, 1024, nil)
	p := Policy{TTL: time.Hour}
	load := func(context.Context) ([]byte, error) { return []byte("state"), nil }
	ctx := context.Background()
	if _, err := r.Get(ctx, "srv", p, load); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res, _ := r.Get(ctx, "srv", p, load); res.State != Fresh {
				b.Fatalf("got %v, want a fresh hit", res.State)
			}
		}
	})
}

// BenchmarkResultsMissCoalesced has 64 goroutines per CPU (HTTP clients)
// Get one key that is never fresh (TTL 0), so each Get waits for a load in
// flight or starts one; loads/op is the share of Gets that started one.
func BenchmarkResultsMissCoalesced(b *testing.B) {
	r := mustResults[[]byte](b, 1024, nil)
	p := Policy{}
	load := func(context.Context) ([]byte, error) {
		runtime.Gosched() // stands in for a round trip to the game server
		return []byte("state"), nil
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Get(ctx, "srv", p, load); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(r.Stats().Loads)/float64(b.N), "loads/op")
}

func TestResultsNegativePolicyIsZero(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	r := mustResults[int](t, 4, clock.Now)
	loads := 0
	load := func(context.Context) (int, error) { loads++; return loads, nil }
	p := Policy{TTL: -5 * time.Second, StaleWhileRevalidate: 10 * time.Second}
	if _, err := r.Get(context.Background(), "k", p, load); err != nil {
		t.Fatal(err)
	}
	clock.Advance(6 * time.Second)
	// With TTL taken as 0, 6 s old is within the 10 s stale window: served
	// stale, not reloaded while the caller waits.
	res, err := r.Get(context.Background(), "k", p, load)
	if err != nil || res.State != Stale {
		t.Fatalf("got %+v (%v), want the stale value", res, err)
	}
}

// Peek answers only what Get would answer at once without loading (a fresh
// value, a cached error), and otherwise neither loads nor adds an entry.
func TestResultsPeek(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Second, NegativeTTL: 2 * time.Second, StaleIfError: time.Minute}
	var fail atomic.Bool
	load, calls := countingLoad(nil, nil, &fail)

	if res, ok, loading := r.Peek("a", p); ok || loading {
		t.Fatalf("empty cache: got %+v, %v, want no answer, no load", res, loading)
	}
	if r.Len() != 0 {
		t.Fatalf("Len after a missed Peek: got %d, want 0", r.Len())
	}
	release := make(chan struct{})
	go r.Get(t.Context(), "a", p, func(ctx context.Context) (string, error) { <-release; return load(ctx) })
	testutil.WaitFor(t, "the load to start", func() bool { _, _, loading := r.Peek("a", p); return loading })
	close(release)
	testutil.WaitFor(t, "the load to end", func() bool { _, ok, _ := r.Peek("a", p); return ok })
	res, ok, loading := r.Peek("a", p)
	if !ok || loading || res.Value != "v1" || res.State != Fresh {
		t.Fatalf("fresh: got %+v, %v, %v, want v1, fresh, no load", res, ok, loading)
	}
	r.clock.Advance(time.Second)
	if res, ok, _ := r.Peek("a", p); ok {
		t.Fatalf("past TTL: got %+v, want no answer (Get would refresh)", res)
	}
	fail.Store(true)
	if _, err := r.Get(t.Context(), "b", p, load); !errors.Is(err, errDown) {
		t.Fatalf("failing load: got %v", err)
	}
	if res, ok, _ := r.Peek("b", p); !ok || res.State != Negative || !errors.Is(res.Err, errDown) {
		t.Fatalf("cached error: got %+v, %v, want the error", res, ok)
	}
	r.clock.Advance(2 * time.Second)
	if res, ok, _ := r.Peek("b", p); ok {
		t.Fatalf("past NegativeTTL: got %+v, want no answer", res)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("loads: got %d, want 2 (Peek never loads)", n)
	}
	if s := r.Stats(); s.Hits < 1 || s.NegativeHits != 1 || s.Misses != 2 || s.Loads != 2 {
		t.Fatalf("stats: got %+v, want Peek's answers counted as hits, its misses not at all", s)
	}
}

// Past its TTL, a value whose refresh failed within NegativeTTL is what Get
// serves without loading (stale-if-error): Peek answers it too, so a caller
// that only peeks keeps serving it while the origin is down.
func TestResultsPeekStaleIfError(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Second, NegativeTTL: 2 * time.Second, StaleIfError: time.Minute}
	var fail atomic.Bool
	load, calls := countingLoad(nil, nil, &fail)
	if _, err := r.Get(t.Context(), "a", p, load); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Second)
	fail.Store(true)
	// Get serves the stale value and refreshes in the background; the
	// refresh fails.
	if res, _ := r.Get(t.Context(), "a", p, load); res.State != Stale || res.Value != "v1" {
		t.Fatalf("Get past TTL: got %+v, want v1 stale", res)
	}
	testutil.WaitFor(t, "the failed refresh", func() bool { _, _, loading := r.Peek("a", p); return !loading && calls.Load() == 2 })
	res, ok, loading := r.Peek("a", p)
	if !ok || loading || res.State != Stale || res.Value != "v1" || res.Age != 2*time.Second {
		t.Fatalf("after the failed refresh: got %+v, %v, %v, want v1 stale, aged 2s", res, ok, loading)
	}
	// Past NegativeTTL since the failure, Get would try again: Peek leaves
	// that to the caller.
	r.clock.Advance(2 * time.Second)
	if res, ok, _ := r.Peek("a", p); ok {
		t.Fatalf("past NegativeTTL since the failure: got %+v, want no answer", res)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("loads: got %d, want 2 (Peek never loads)", n)
	}
}

// An Uncached error reaches the load's waiters but is not stored: the next
// Get loads again, and a value cached before stays.
func TestResultsUncachedError(t *testing.T) {
	r := newTestResults(10)
	p := Policy{TTL: time.Second, StaleIfError: time.Minute, NegativeTTL: time.Hour}
	busy := errors.New("no capacity")
	var refuse atomic.Bool
	refuse.Store(true)
	var calls atomic.Int64
	load := func(context.Context) (string, error) {
		n := calls.Add(1)
		if refuse.Load() {
			return "", Uncached(busy)
		}
		return fmt.Sprint("v", n), nil
	}
	ctx := context.Background()
	res, err := r.Get(ctx, "k", p, load)
	if !errors.Is(err, busy) || res.State != Negative {
		t.Fatalf("refused load: got %+v, %v; want Negative with %v", res, err, busy)
	}
	if _, isMark := err.(uncached); isMark {
		t.Fatalf("the waiter got the mark, not the error")
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("a refused first load left %d entries, want 0", n)
	}
	refuse.Store(false)
	if res, err := r.Get(ctx, "k", p, load); err != nil || res.Value != "v2" {
		t.Fatalf("after the refusal: got %+v, %v; want v2 loaded (the refusal was not cached)", res, err)
	}
	refuse.Store(true)
	r.clock.Advance(2 * time.Second) // past TTL: a Get waits for a refresh
	res, err = r.Get(ctx, "k", p, load)
	if err != nil || res.Value != "v2" || res.State != Stale {
		t.Fatalf("refused refresh: got %+v, %v; want the stale v2", res, err)
	}
	refuse.Store(false)
	if res, err := r.Get(ctx, "k", p, load); err != nil || res.Value != "v4" {
		t.Fatalf("after the refused refresh: got %+v, %v; want v4 loaded at once (no NegativeTTL wait)", res, err)
	}
}

// Generation changes when a load ends or a key is dropped, not on hits;
// Peek's Until is when the clock alone changes its answer: the end of the
// TTL for a fresh value, of the pause after a failed refresh for a stale
// one, none while a refresh runs.
func TestResultsGenerationAndUntil(t *testing.T) {
	r := newTestResults(1)
	p := Policy{TTL: time.Second, StaleIfError: time.Hour, StaleWhileRevalidate: time.Hour, NegativeTTL: 10 * time.Second}
	var fail atomic.Bool
	release := make(chan struct{})
	load, _ := countingLoad(release, func(n int64) bool { return n == 2 }, &fail)
	ctx := t.Context()
	g0 := r.Generation()
	if _, err := r.Get(ctx, "a", p, load); err != nil {
		t.Fatal(err)
	}
	g1 := r.Generation()
	if g1 == g0 {
		t.Fatalf("a load ended: generation %d unchanged", g1)
	}
	res, ok, _ := r.Peek("a", p)
	if !ok || !res.Until.Equal(t0.Add(time.Second)) || r.Generation() != g1 {
		t.Fatalf("fresh: ok %v, until %v, generation %d; want %v, %d", ok, res.Until, r.Generation(), t0.Add(time.Second), g1)
	}
	r.clock.Advance(time.Second)
	_, _ = r.Get(ctx, "a", p, load) // stale: the refresh (call 2) waits for release
	res, ok, loading := r.Peek("a", p)
	if !ok || !loading || !res.Until.IsZero() {
		t.Fatalf("refreshing: ok %v, loading %v, until %v; want no time bound", ok, loading, res.Until)
	}
	fail.Store(true)
	close(release)
	testutil.WaitFor(t, "the refresh to fail", func() bool { return r.finished.Load() == 2 })
	if r.Generation() == g1 {
		t.Fatal("a refresh failed: generation unchanged")
	}
	res, ok, _ = r.Peek("a", p)
	if want := t0.Add(time.Second + 10*time.Second); !ok || res.State != Stale || !res.Until.Equal(want) {
		t.Fatalf("after a failed refresh: ok %v, %v until %v; want stale until %v", ok, res.State, res.Until, want)
	}
	g2 := r.Generation()
	_, _ = r.Get(ctx, "b", p, load) // evicts a
	if _, ok, _ := r.Peek("a", p); ok || r.Generation() == g2 {
		t.Fatalf("a evicted: still cached %v, or generation unchanged (%d)", ok, r.Generation())
	}
	g3 := r.Generation()
	r.Invalidate("b")
	if r.Generation() == g3 {
		t.Fatal("Invalidate: generation unchanged")
	}
}
