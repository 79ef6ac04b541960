package testutil

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds (first at once, then at intervals
// growing from 1 ms to 20 ms), and fails the test if it does not within
// 10 s. The bound only turns a hang into a failure: tests wait for
// conditions, never for time to pass.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitForWithin(t, 10*time.Second, what, cond)
}

// WaitForWithin is WaitFor with a bound of its own, for a condition that
// takes a configured time to come (an expiry).
func WaitForWithin(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(pause)
	}
}
