package periodic

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCallsUntilStopped(t *testing.T) {
	stop := make(chan struct{})
	returned := make(chan struct{})
	var calls atomic.Int64
	go func() {
		Run(stop, time.Millisecond, func() { calls.Add(1) })
		close(returned)
	}()
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("got %d calls in 10s, want at least 3", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of stop")
	}
}

func TestRunWokenCallsOnWake(t *testing.T) {
	stop, wake := make(chan struct{}), make(chan struct{})
	returned := make(chan struct{})
	calls := make(chan struct{})
	go func() {
		RunWoken(stop, wake, time.Hour, func() { calls <- struct{}{} })
		close(returned)
	}()
	for i := range 2 {
		wake <- struct{}{}
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("wake %d: no call within 10s (the tick is an hour away)", i+1)
		}
	}
	close(stop)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("RunWoken did not return within 10s of stop")
	}
}

// A call that outlasts the interval (a discovery health check whose wait is
// longer than its interval) delays the next one instead of running beside
// it: calls never overlap and none pile up.
func TestRunCallsNeverOverlap(t *testing.T) {
	stop := make(chan struct{})
	returned := make(chan struct{})
	var running, most, calls atomic.Int64
	go func() {
		Run(stop, time.Millisecond, func() {
			n := running.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			time.Sleep(5 * time.Millisecond) // five intervals
			running.Add(-1)
			calls.Add(1)
		})
		close(returned)
	}()
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("got %d calls in 10s, want at least 5", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of stop")
	}
	if got := most.Load(); got != 1 {
		t.Fatalf("got %d calls running at once, want 1", got)
	}
	if got := running.Load(); got != 0 {
		t.Fatalf("got %d calls still running after Run returned, want 0", got)
	}
}
