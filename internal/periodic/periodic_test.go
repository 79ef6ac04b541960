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
