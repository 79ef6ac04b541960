package periodic

import (
	"sync/atomic"
	"testing"
	"time"
)

// started runs run on a goroutine with a stop channel of its own, and
// returns a function that closes it and waits up to 10s for run to return.
func started(t *testing.T, run func(stop chan struct{})) (stopAndWait func()) {
	stop, returned := make(chan struct{}), make(chan struct{})
	go func() {
		run(stop)
		close(returned)
	}()
	return func() {
		close(stop)
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10s of stop")
		}
	}
}

// awaitCalls waits up to 10s for calls to reach n.
func awaitCalls(t *testing.T, calls *atomic.Int64, n int64) {
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("got %d calls in 10s, want at least %d", calls.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRunCallsUntilStopped(t *testing.T) {
	var calls atomic.Int64
	stop := started(t, func(stop chan struct{}) { Run(stop, time.Millisecond, func() { calls.Add(1) }) })
	awaitCalls(t, &calls, 3)
	stop()
}

func TestRunWokenCallsOnWake(t *testing.T) {
	wake, calls := make(chan struct{}), make(chan struct{})
	stop := started(t, func(stop chan struct{}) {
		RunWoken(stop, wake, time.Hour, func() { calls <- struct{}{} })
	})
	for i := range 2 {
		wake <- struct{}{}
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("wake %d: no call within 10s (the tick is an hour away)", i+1)
		}
	}
	stop()
}

// A call that outlasts the interval (a discovery health check whose wait is
// longer than its interval) delays the next one instead of running beside
// it: calls never overlap.
func TestRunCallsNeverOverlap(t *testing.T) {
	var running, most, calls atomic.Int64
	stop := started(t, func(stop chan struct{}) {
		Run(stop, time.Millisecond, func() {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond) // five intervals
			running.Add(-1)
			calls.Add(1)
		})
	})
	awaitCalls(t, &calls, 5)
	stop()
	if got := most.Load(); got != 1 {
		t.Fatalf("got %d calls running at once, want 1", got)
	}
	if got := running.Load(); got != 0 {
		t.Fatalf("got %d calls still running after Run returned, want 0", got)
	}
}
