//go:build race

package testutil

// Race reports whether the race detector is on. Under it, sync.Pool drops a
// random share of what is put back, so code that reuses pooled values
// allocates now and then: tests skip their allocation counts (not their
// behavioural checks) when it is set, as the standard library's do.
const Race = true
