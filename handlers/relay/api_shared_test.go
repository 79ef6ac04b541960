package relay

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gamegate/gamegate/store"
)

// fakeShared is a SharedLimits that counts its calls and fails while down.
type fakeShared struct {
	mu      sync.Mutex
	down    bool
	allows  int
	reserve int
	refuse  bool // Allow refuses every event
}

func (f *fakeShared) err() error {
	if f.down {
		return fmt.Errorf("dial: %w", store.ErrUnavailable)
	}
	return nil
}

func (f *fakeShared) Allow(context.Context, string, time.Duration, time.Duration) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.err(); err != nil {
		return false, 0, err
	}
	f.allows++
	return !f.refuse, 7 * time.Second, nil
}

func (f *fakeShared) Wait(context.Context, string, time.Duration, time.Duration) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return 0, f.err()
}

func (f *fakeShared) Reserve(context.Context, string, string, time.Time, time.Time, int, string, int, string, int) (int, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.err(); err != nil {
		return 0, 0, err
	}
	f.reserve++
	return 0, 0, nil
}

func (f *fakeShared) Release(context.Context, string, string, string, string) error { return nil }

// With Shared, its decisions apply; while it is down, the API's own do,
// and each such decision is counted.
func TestAPISharedLimitsFallBack(t *testing.T) {
	shared := &fakeShared{refuse: true}
	fallbacks := map[string]int{}
	r := newAPIRig(t, func(c *APIConfig) {
		c.Shared = shared
		c.OnSharedFallback = func(limit string) { fallbacks[limit]++ }
	})
	w := r.do("POST", "/v1/allocate", `{"maxConnections": 1}`)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "7" {
		t.Fatalf("refused by the shared limit: got %d, Retry-After %q, want 429 and 7", w.Code, w.Header().Get("Retry-After"))
	}
	shared.refuse = false
	r.allocate(t, `{"maxConnections": 1}`)
	if shared.reserve != 1 || len(fallbacks) != 0 {
		t.Fatalf("shared reservations %d, fallbacks %v: want 1 and none", shared.reserve, fallbacks)
	}
	shared.down = true
	r.allocate(t, `{"maxConnections": 1}`) // the local limits, which allow it
	if fallbacks[FallbackRate] == 0 || fallbacks[FallbackAllocations] != 1 {
		t.Fatalf("fallbacks while the store is down: got %v", fallbacks)
	}
	shared.down = false
	before := shared.allows
	r.allocate(t, `{"maxConnections": 1}`)
	if shared.allows == before || shared.reserve != 2 {
		t.Fatal("the shared limits were not used again once the store answered")
	}
}

// A store that cannot be reached makes 503 with Retry-After; another
// failure stays 500.
func TestAPIStoreUnavailable(t *testing.T) {
	r := newAPIRig(t, nil)
	r.store.fail = fmt.Errorf("redis storage: store x: %w", store.ErrUnavailable)
	w := r.do("POST", "/v1/allocate", `{"maxConnections": 1}`)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("allocate with the store unreachable: got %d, Retry-After %q, want 503 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	r.store.fail = context.DeadlineExceeded
	if w := r.do("POST", "/v1/allocate", `{"maxConnections": 1}`); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("allocate with the store too slow: got %d, want 503", w.Code)
	}
}
