package caddyglue

import (
	"errors"
	"slices"
	"testing"
)

type poolProbe struct {
	n         int
	destructs int
}

func (p *poolProbe) Destruct() error { p.destructs++; return nil }

// A value lives while a configuration holds it: held twice, released
// twice, it is destroyed once, with its key, and leaves the live set.
func TestLivePoolHoldsAcrossReloads(t *testing.T) {
	var destroyed []string
	pool := NewLivePool[*poolProbe](func(key string, _ *poolProbe) { destroyed = append(destroyed, key) })
	made := 0
	newProbe := func() (*poolProbe, error) { made++; return &poolProbe{n: 3}, nil }
	a, err := pool.LoadOrNew("k", newProbe)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pool.LoadOrNew("k", newProbe) // the reloaded configuration's hold
	if a != b || made != 1 {
		t.Fatalf("got %p and %p after %d made, want one value", a, b, made)
	}
	if got := pool.Sum(func(p *poolProbe) int { return p.n }); got != 3 {
		t.Errorf("Sum: got %d, want 3 (the value once)", got)
	}
	if err := pool.Release("k"); err != nil || !pool.Held("k") || a.destructs != 0 {
		t.Fatalf("after the old configuration's release: err %v, held %v, destructs %d; want it kept", err, pool.Held("k"), a.destructs)
	}
	if err := pool.Release("k"); err != nil || pool.Held("k") || a.destructs != 1 {
		t.Fatalf("after the last release: err %v, held %v, destructs %d; want it destroyed once", err, pool.Held("k"), a.destructs)
	}
	if !slices.Equal(destroyed, []string{"k"}) {
		t.Errorf("onDestruct got %q, want [k]", destroyed)
	}
	if got := pool.Sum(func(p *poolProbe) int { return p.n }); got != 0 {
		t.Errorf("Sum after destruction: got %d, want 0", got)
	}
	failed := errors.New("no room")
	if _, err := pool.LoadOrNew("bad", func() (*poolProbe, error) { return nil, failed }); !errors.Is(err, failed) || pool.Held("bad") {
		t.Errorf("a value that could not be made: got %v, held %v; want the error and nothing held", err, pool.Held("bad"))
	}
}
