package ratelimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/internal/testutil"
)

// A client that has spent its burst stays limited however many other keys
// arrive: a full table refuses the newcomers instead of forgetting (or
// clearing) the states it holds.
func TestTableFullKeepsStates(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	tab := ratelimit.NewTable[string](100, ratelimit.NewClock(clock.Now))
	l, err := ratelimit.NewLimit(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if ok, _ := tab.Allow(l, "victim-limited"); !ok {
			t.Fatal("the burst was refused")
		}
	}
	if ok, _ := tab.Allow(l, "victim-limited"); ok {
		t.Fatal("an event past the burst was admitted")
	}
	// An attacker with many addresses fills the table.
	refused := 0
	for i := range 1000 {
		if ok, _ := tab.Allow(l, fmt.Sprintf("attacker-%d", i)); !ok {
			refused++
		}
	}
	if got := tab.Len(); got != 100 {
		t.Errorf("Len = %d after 1001 keys, want the bound, 100", got)
	}
	if refused != 1000-99 {
		t.Errorf("%d newcomers refused, want %d", refused, 1000-99)
	}
	if ok, wait := tab.Allow(l, "victim-limited"); ok || wait <= 0 {
		t.Errorf("after the flood the limited key got ok=%v wait=%v, want refused with a wait", ok, wait)
	}
	// Once the held keys are idle, a sweep makes room.
	clock.Advance(3 * time.Second)
	if ok, _ := tab.Allow(l, "newcomer"); !ok {
		t.Error("a newcomer was refused although every held key is idle")
	}
	if got := tab.Len(); got != 1 {
		t.Errorf("Len = %d after the sweep, want 1", got)
	}
}

// While the table is full of keys that are not idle, it is walked at most
// once a second, and the refusal says when to come back.
func TestTableFullRefusalWait(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	tab := ratelimit.NewTable[int](2, ratelimit.NewClock(clock.Now))
	l, _ := ratelimit.NewLimit(0.01, 1) // one per 100 s: keys stay busy
	tab.Allow(l, 1)
	tab.Allow(l, 2)
	ok, wait := tab.Allow(l, 3)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("newcomer to a full table: ok=%v wait=%v, want refused within 1s", ok, wait)
	}
	if ok, _ := tab.AllowWithin(l, 3, 3); !ok {
		t.Error("a caller's larger bound did not admit a newcomer")
	}
	if ok, _ := tab.Allow(l, 4); ok {
		t.Error("the table's own bound admitted a newcomer past it")
	}
}

func TestTableUnlimited(t *testing.T) {
	tab := ratelimit.NewTable[int](1, ratelimit.Clock{})
	for i := range 10 {
		if ok, _ := tab.Allow(ratelimit.Limit{}, i); !ok {
			t.Fatal("the zero Limit refused an event")
		}
	}
	if got := tab.Len(); got != 0 {
		t.Errorf("Len = %d, want 0: unlimited keys are not held", got)
	}
}

// Wait looks without counting: it says when the next event would be
// admitted, and asking changes nothing.
func TestTableWait(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	tab := ratelimit.NewTable[string](10, ratelimit.NewClock(clock.Now))
	l, err := ratelimit.NewLimit(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Wait(l, "k"); got != 0 {
		t.Fatalf("Wait of an unknown key = %v, want 0", got)
	}
	for range 2 {
		if got := tab.Wait(l, "k"); got != 0 {
			t.Fatalf("Wait within the burst = %v, want 0", got)
		}
		if ok, _ := tab.Allow(l, "k"); !ok {
			t.Fatal("the burst was refused")
		}
	}
	for range 3 {
		if got := tab.Wait(l, "k"); got != time.Second {
			t.Fatalf("Wait past the burst = %v, want 1s", got)
		}
	}
	clock.Advance(time.Second)
	if got := tab.Wait(l, "k"); got != 0 {
		t.Fatalf("Wait a second later = %v, want 0", got)
	}
	if ok, _ := tab.Allow(l, "k"); !ok {
		t.Fatal("the event Wait promised was refused")
	}
}

// AllowN admits n events of a key at once or none: a refused request
// leaves the key's state as it was.
func TestTableAllowN(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	tab := ratelimit.NewTable[string](10, ratelimit.NewClock(clock.Now))
	l, err := ratelimit.NewLimit(1, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		n    int64
		want bool
	}{{4, true}, {4, true}, {4, false}, {2, true}, {1, false}} {
		if ok, _ := tab.AllowN(l, "k", tc.n); ok != tc.want {
			t.Fatalf("step %d: AllowN(%d) = %v, want %v", i, tc.n, ok, tc.want)
		}
	}
	clock.Advance(3 * time.Second)
	if ok, _ := tab.AllowN(l, "k", 3); !ok {
		t.Fatal("3 events refused 3 s after the burst was spent")
	}
}
