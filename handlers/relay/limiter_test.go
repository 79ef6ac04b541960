package relay

import (
	"fmt"
	"testing"
	"time"
)

func TestAllocationLimiter(t *testing.T) {
	l := NewAllocationLimiter()
	now := time.Unix(1_700_000_000, 0)
	exp := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }
	reserve := func(client string, expires time.Time, limit, perClient int) LimitReached {
		t.Helper()
		got, _ := l.Reserve(now, expires, limit, Holder{Client: client, PerClient: perClient})
		return got
	}
	// Per client: a holds 2 of its 2, b may still reserve.
	for i, want := range []LimitReached{LimitNone, LimitNone, LimitPerClient} {
		if got := reserve("a", exp(10+i), 5, 2); got != want {
			t.Fatalf("a's reservation %d: got %v, want %v", i+1, got, want)
		}
	}
	if got, retry := l.Reserve(now, exp(20), 5, Holder{Client: "a", PerClient: 2}); got != LimitPerClient || retry != 10*time.Second {
		t.Fatalf("a past its quota: got %v retry %v, want LimitPerClient retry 10s", got, retry)
	}
	for i := range 3 {
		if got := reserve("b", exp(30+i), 5, 0); got != LimitNone {
			t.Fatalf("b's reservation %d: got %v", i+1, got)
		}
	}
	// The total: 5 of 5.
	if got, retry := l.Reserve(now, exp(40), 5, Holder{Client: "c", PerClient: 2}); got != LimitTotal || retry != 10*time.Second {
		t.Fatalf("past the total: got %v retry %v, want LimitTotal retry 10s", got, retry)
	}
	// Releasing one of a's gives a and everyone a place back; releasing
	// the earliest moves the retry time to the next.
	l.Release(exp(10), Holder{Client: "a"})
	if n, clients := l.ClientLen(now, "a"); n != 1 || clients != 2 {
		t.Fatalf("after a release: a holds %d of %d clients, want 1 of 2", n, clients)
	}
	if got := reserve("a", exp(50), 5, 2); got != LimitNone {
		t.Fatalf("a after a release: got %v", got)
	}
	if _, retry := l.Reserve(now, exp(60), 5, Holder{Client: "c", PerClient: 2}); retry != 11*time.Second {
		t.Fatalf("retry after the earliest was released: got %v, want 11s", retry)
	}
	// Expiry frees places and forgets clients without allocations.
	now = exp(33)
	if n := l.Len(now); n != 1 {
		t.Fatalf("after most expired: got %d counted, want 1 (a's at 50s)", n)
	}
	if n, clients := l.ClientLen(now, "b"); n != 0 || clients != 1 {
		t.Fatalf("b after its allocations expired: holds %d, %d clients held, want 0 and 1", n, clients)
	}
	l.Release(exp(50), Holder{Client: "a"})
	if n, clients := l.ClientLen(now, "a"); n != 0 || clients != 0 || l.Len(now) != 0 {
		t.Fatalf("after the last release: a holds %d, %d clients, %d in all; want none", n, clients, l.Len(now))
	}
	// Equal expiry times are counted apart.
	reserve("d", exp(100), 5, 0)
	reserve("d", exp(100), 5, 0)
	l.Release(exp(100), Holder{Client: "d"})
	if n := l.Len(now); n != 1 {
		t.Fatalf("two at one time, one released: got %d, want 1", n)
	}
}

// BenchmarkAllocationLimiterRelease releases one allocation among n: its
// cost must not grow with n (it was a linear search).
func BenchmarkAllocationLimiterRelease(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l := NewAllocationLimiter()
			now := time.Unix(1_700_000_000, 0)
			for i := range n {
				l.Reserve(now, now.Add(time.Hour+time.Duration(i)), n+1, Holder{Client: fmt.Sprint(i % 100), PerClient: 0})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				expires := now.Add(2*time.Hour + time.Duration(i))
				l.Reserve(now, expires, n+1, Holder{Client: "x", PerClient: 0})
				l.Release(expires, Holder{Client: "x"})
			}
		})
	}
}

// Reservations released over and over (a failing store) do not pile up.
func TestAllocationLimiterReleaseBounded(t *testing.T) {
	l := NewAllocationLimiter()
	now := time.Unix(1_700_000_000, 0)
	l.Reserve(now, now.Add(time.Hour), 10, Holder{Client: "a", PerClient: 0})
	for i := range 10_000 {
		expires := now.Add(2*time.Hour + time.Duration(i))
		if got, _ := l.Reserve(now, expires, 10, Holder{Client: "a", PerClient: 5}); got != LimitNone {
			t.Fatalf("reservation %d: got %v", i, got)
		}
		l.Release(expires, Holder{Client: "a"})
	}
	if n := len(l.all.heap.items); n > 2*1+64 {
		t.Fatalf("heap after 10000 released reservations: %d entries, want at most %d", n, 2+64)
	}
	if n := len(l.byClient["a"].heap.items); n > 2*1+64 {
		t.Fatalf("a's heap after 10000 released reservations: %d entries, want at most %d", n, 2+64)
	}
	if n := l.Len(now); n != 1 {
		t.Fatalf("counted: got %d, want 1", n)
	}
}

// A Release that comes after its allocation expired (a storage write that
// took longer than the allocation's life) uncounts nothing: the allocation
// was uncounted when it expired.
func TestAllocationLimiterReleaseAfterExpiry(t *testing.T) {
	l := NewAllocationLimiter()
	now := time.Unix(1_700_000_000, 0)
	short, long := now.Add(time.Second), now.Add(time.Hour)
	for _, r := range []struct {
		client  string
		expires time.Time
	}{{"a", short}, {"a", long}, {"b", long}} {
		if got, _ := l.Reserve(now, r.expires, 10, Holder{Client: r.client, PerClient: 0}); got != LimitNone {
			t.Fatalf("reserve %v: %v", r, got)
		}
	}
	later := now.Add(2 * time.Second)
	if n := l.Len(later); n != 2 {
		t.Fatalf("after the short one expired: %d counted, want 2", n)
	}
	l.Release(short, Holder{Client: "a"})
	if n := l.Len(later); n != 2 {
		t.Fatalf("after releasing the expired one: %d counted, want 2", n)
	}
	if n, _ := l.ClientLen(later, "a"); n != 1 {
		t.Fatalf("client a: %d counted, want 1", n)
	}
}

// Clients of one network share its limit: each stays within its own, and
// together they stop at the network's; another network is not held back.
// Expiry and Release uncount from the network too.
func TestAllocationLimiterPerNetwork(t *testing.T) {
	l := NewAllocationLimiter()
	now := time.Unix(1_700_000_000, 0)
	h := func(client, network string) Holder {
		return Holder{Client: client, PerClient: 2, Network: network, PerNetwork: 5}
	}
	granted := 0
	for i := range 10 {
		got, retry := l.Reserve(now, now.Add(time.Duration(10+i)*time.Second), 100, h(fmt.Sprint("c", i), "net-a"))
		switch got {
		case LimitNone:
			granted++
		case LimitPerNetwork:
			if retry != 10*time.Second {
				t.Fatalf("network limit: retry %v, want 10s (its first allocation's expiry)", retry)
			}
		default:
			t.Fatalf("client %d: got %v", i, got)
		}
	}
	if n, networks := l.NetworkLen(now, "net-a"); granted != 5 || n != 5 || networks != 1 {
		t.Fatalf("ten clients of one network: %d granted, network counts %d of %d networks; want 5, 5, 1", granted, n, networks)
	}
	if got, _ := l.Reserve(now, now.Add(time.Minute), 100, h("c0", "net-b")); got != LimitNone {
		t.Fatalf("a client in another network: got %v, want LimitNone", got)
	}
	l.Release(now.Add(10*time.Second), h("c0", "net-a"))
	if n, _ := l.NetworkLen(now, "net-a"); n != 4 {
		t.Fatalf("after a release the network counts %d, want 4", n)
	}
	if n, networks := l.NetworkLen(now.Add(time.Hour), "net-a"); n != 0 || networks != 0 {
		t.Fatalf("after every expiry: network counts %d of %d networks, want 0 of 0", n, networks)
	}
}
