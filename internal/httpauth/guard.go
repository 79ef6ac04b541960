package httpauth

import (
	"context"
	"net/http"
	"time"
)

// Limiter limits events per key: Decide counts one if it is allowed,
// Wait says how long until one would be, counting nothing. The relay
// API's limiters (relay.Limiter: relay.LocalLimiter, or one shared by a
// cluster's nodes) are Limiters.
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
