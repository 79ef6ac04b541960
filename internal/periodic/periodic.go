// Package periodic runs background upkeep (sweeps of expired state, polls
// of a watched file, health rounds) at a fixed interval until it is told to
// stop, the one way every gamegate component does it.
package periodic

import "time"

// Run calls f every d until stop is closed, then returns; a call of f in
// progress finishes first. Calls never overlap: a tick that comes while f
// runs is dropped, as time.Ticker drops it. Run blocks; start it in its
// own goroutine. d must be positive.
func Run(stop <-chan struct{}, d time.Duration, f func()) { RunWoken(stop, nil, d, f) }

// RunWoken is Run that also calls f whenever wake receives, for upkeep that
// has news to act on before the next tick (a nil wake never receives).
func RunWoken(stop, wake <-chan struct{}, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		case <-wake:
			f()
		}
	}
}
