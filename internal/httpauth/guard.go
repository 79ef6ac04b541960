package httpauth

import (
	"context"
	"net/http"
	"time"

	"github.com/gamegate/gamegate/internal/ratelimit"
)

// The failed-attempt limit's defaults: a network may send 20 requests
// without a valid key at once, then one every 10 seconds (the relay
// allocations API's auth_failure_rate and auth_failure_burst defaults).
// At that pace a 16-byte random key is out of reach.
const (
	DefaultFailureRate  = 0.1
	DefaultFailureBurst = 20
	// DefaultMaxNetworks bounds the networks whose failures a local
	// table remembers.
	DefaultMaxNetworks = 65536
)

// Limiter limits events per key: Decide counts one if it is allowed,
// Wait says how long until one would be, counting nothing. The relay
// API's limiters (relay.Limiter), local or shared by a cluster's nodes,
// have this method set.
type Limiter interface {
	Decide(ctx context.Context, key string) (allowed bool, retryAfter time.Duration)
	Wait(ctx context.Context, key string) time.Duration
}

// Guard checks the API key of requests and limits the requests without a
// valid one from each client network: past its Failures, a network is
// refused before its key is looked at, valid or not, since answering 429
// to a wrong key and 200 to the right one would let the guessing go on.
type Guard struct {
	Keys *Keys
	// Failures limits the requests without a valid key per network; nil
	// limits nothing.
	Failures Limiter
}

// Check reports whether r may proceed: status 0 when no key is required
// or r presents a valid one; http.StatusTooManyRequests, with how long
// until the network may try again, when network (the caller's network,
// as clientaddr.NetworkString makes it) is past its failures; else
// http.StatusUnauthorized, the failure counted. The caller writes the
// answer (with SetChallenge for 401, Retry-After for 429).
func (g Guard) Check(ctx context.Context, r *http.Request, network string) (status int, retryAfter time.Duration) {
	if !g.Keys.Required() {
		return 0, 0
	}
	if g.Failures != nil {
		if wait := g.Failures.Wait(ctx, network); wait > 0 {
			return http.StatusTooManyRequests, wait
		}
	}
	if g.Keys.Allow(r) {
		return 0, 0
	}
	if g.Failures != nil {
		g.Failures.Decide(ctx, network)
	}
	return http.StatusUnauthorized, 0
}

// LocalFailures is a Limiter of this process's own: limit applied to each
// network's state in Table, a new network admitted while the table holds
// fewer than MaxKeys. Keep the table across configuration reloads, so
// that a reload hands no network a fresh burst.
type LocalFailures struct {
	Table   *ratelimit.Table[string]
	Limit   ratelimit.Limit
	MaxKeys int
}

// Decide implements Limiter.
func (l *LocalFailures) Decide(_ context.Context, key string) (bool, time.Duration) {
	return l.Table.AllowWithin(l.Limit, key, l.MaxKeys)
}

// Wait implements Limiter.
func (l *LocalFailures) Wait(_ context.Context, key string) time.Duration {
	return l.Table.Wait(l.Limit, key)
}
