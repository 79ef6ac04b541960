package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/store/redisstore"
)

// Two nodes on one prefix share one limit: a burst of 4 at one event a
// minute admits 4 events in all, whichever node sees them.
func TestAllowIsSharedByNodes(t *testing.T) {
	prefix := testutil.RedisPrefix(t)
	a := newStore(t, redisstore.Config{KeyPrefix: prefix})
	b := newStore(t, redisstore.Config{KeyPrefix: prefix})
	ctx := context.Background()
	allowed := 0
	for i := range 10 {
		node := []*redisstore.Store{a, b}[i%2]
		ok, retry, err := node.Allow(ctx, "join:192.0.2.1", time.Minute, 4*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			allowed++
		} else if retry <= 0 || retry > time.Minute {
			t.Fatalf("refused with retry %v, want (0, 1m]", retry)
		}
	}
	if allowed != 4 {
		t.Fatalf("two nodes allowed %d of 10 events, want the burst of 4", allowed)
	}
	// Another key has a burst of its own.
	if ok, _, err := b.Allow(ctx, "join:192.0.2.2", time.Minute, 4*time.Minute); !ok || err != nil {
		t.Fatalf("another key: got %v, %v", ok, err)
	}
}

// The rate refills: at 20 a second, a spent burst of 1 admits again after
// 50 ms.
func TestAllowRefills(t *testing.T) {
	s := newStore(t, redisstore.Config{})
	ctx := context.Background()
	if ok, _, _ := s.Allow(ctx, "k", 50*time.Millisecond, 50*time.Millisecond); !ok {
		t.Fatal("first event refused")
	}
	ok, retry, _ := s.Allow(ctx, "k", 50*time.Millisecond, 50*time.Millisecond)
	if ok || retry <= 0 || retry > 50*time.Millisecond {
		t.Fatalf("second event at once: got %v, retry %v", ok, retry)
	}
	time.Sleep(retry + 5*time.Millisecond) // the passing of time is what is tested
	if ok, _, _ := s.Allow(ctx, "k", 50*time.Millisecond, 50*time.Millisecond); !ok {
		t.Fatal("refused after the retry time")
	}
}

// The allocation pool, the client's and the network's allocations are
// counted across nodes, released places are free again, and expired ones
// are uncounted.
func TestReserveSharedPool(t *testing.T) {
	prefix := testutil.RedisPrefix(t)
	a := newStore(t, redisstore.Config{KeyPrefix: prefix})
	b := newStore(t, redisstore.Config{KeyPrefix: prefix})
	ctx := context.Background()
	now := time.Now()
	exp := now.Add(time.Minute)
	const pool = "203.0.113.7:7777"
	reserve := func(s *redisstore.Store, client, network, member string, at time.Time) (int, time.Duration) {
		t.Helper()
		r, retry, err := s.Reserve(ctx, pool, member, at, exp, 4, client, 2, network, 3)
		if err != nil {
			t.Fatal(err)
		}
		return r, retry
	}
	for _, c := range []struct {
		node                    *redisstore.Store
		client, network, member string
		want                    int
	}{
		{a, "c1", "n1", "m1", 0},
		{b, "c1", "n1", "m2", 0}, // on the other node
		{a, "c1", "n1", "m3", 2}, // the client's third
		{b, "c2", "n1", "m4", 0},
		{a, "c3", "n1", "m5", 3}, // the network's fourth
		{a, "c4", "n2", "m6", 0},
		{b, "c5", "n3", "m7", 1}, // the pool's fifth
	} {
		if r, retry := reserve(c.node, c.client, c.network, c.member, now); r != c.want || (r != 0 && retry != time.Minute) {
			t.Fatalf("%s: got %d (retry %v), want %d", c.member, r, retry, c.want)
		}
	}
	if err := b.Release(ctx, pool, "m6", "c4", "n2"); err != nil {
		t.Fatal(err)
	}
	if r, _ := reserve(a, "c5", "n3", "m7", now); r != 0 {
		t.Fatalf("after a release: reached %d", r)
	}
	if r, _ := reserve(a, "c6", "n4", "m8", exp); r != 0 {
		t.Fatalf("once every place expired: reached %d", r)
	}
}

// Wait says how long until Allow would allow, without counting.
func TestWaitDoesNotCount(t *testing.T) {
	s := newStore(t, redisstore.Config{})
	ctx := context.Background()
	for range 5 {
		if w, err := s.Wait(ctx, "k", time.Minute, 2*time.Minute); w != 0 || err != nil {
			t.Fatalf("Wait before any event: %v, %v", w, err)
		}
	}
	for range 2 {
		if ok, _, _ := s.Allow(ctx, "k", time.Minute, 2*time.Minute); !ok {
			t.Fatal("refused within the burst")
		}
	}
	if w, err := s.Wait(ctx, "k", time.Minute, 2*time.Minute); w <= 0 || w > time.Minute || err != nil {
		t.Fatalf("Wait after the burst: %v, %v, want (0, 1m]", w, err)
	}
}
