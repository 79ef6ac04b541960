package httpauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/internal/testutil"
)

// A network past its failures is refused before its key is looked at: a
// guesser cannot tell the right key from 429s; another network is not
// held back; an attempt is earned back at the failure rate. The limiter is
// the relay allocations API's, at its defaults.
func TestGuardLimitsFailuresPerNetwork(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	keys, err := httpauth.New([]byte("the-right-key-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	limit, err := ratelimit.NewLimit(relay.DefaultAuthFailureRate, relay.DefaultAuthFailureBurst)
	if err != nil {
		t.Fatal(err)
	}
	g := httpauth.Guard{Keys: keys, Failures: &relay.LocalLimiter{Table: ratelimit.NewTable[string](16, ratelimit.NewClock(clock.Now)), Limit: limit, MaxKeys: 16}}
	req := func(key string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		return r
	}
	ctx := context.Background()
	for i := range relay.DefaultAuthFailureBurst {
		if status, _ := g.Check(ctx, req("wrong"), "192.0.2.0/24"); status != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: got %d, want 401", i+1, status)
		}
	}
	for _, key := range []string{"wrong", "the-right-key-0123456789"} {
		status, wait := g.Check(ctx, req(key), "192.0.2.0/24")
		if status != http.StatusTooManyRequests || wait <= 0 || wait > 10*time.Second {
			t.Fatalf("key %q past the burst: got %d, retry after %v, want 429 within 10s", key, status, wait)
		}
	}
	if status, _ := g.Check(ctx, req("the-right-key-0123456789"), "198.51.100.0/24"); status != 0 {
		t.Fatalf("the right key from another network: got %d, want 0", status)
	}
	clock.Advance(10 * time.Second)
	if status, _ := g.Check(ctx, req("the-right-key-0123456789"), "192.0.2.0/24"); status != 0 {
		t.Fatalf("the right key once an attempt is earned back: got %d, want 0", status)
	}
	if status, _ := (httpauth.Guard{}).Check(ctx, req("anything"), "192.0.2.0/24"); status != 0 {
		t.Fatalf("no keys required: got %d, want 0", status)
	}
}
