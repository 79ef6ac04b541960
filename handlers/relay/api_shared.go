package relay

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/store"
)

// SharedLimits are limits that every node sharing a store enforces
// together (package redisstore's Store is one), so that an attacker does
// not multiply them by the number of nodes. Each decision is one round
// trip to the store.
type SharedLimits interface {
	// Allow decides one event of key by the generic cell rate algorithm:
	// each event costs interval, and allowed events may run ahead of time
	// by window. If refused, it returns how long until one would be.
	Allow(ctx context.Context, key string, interval, window time.Duration) (bool, time.Duration, error)
	// Wait is how long until Allow would allow an event of key, without
	// counting one.
	Wait(ctx context.Context, key string, interval, window time.Duration) (time.Duration, error)
	// Reserve counts member, an allocation expiring at expires, in pool
	// if it holds fewer than limit unexpired ones, client fewer than
	// perClient and network fewer than perNetwork in all pools; otherwise
	// it returns which was reached (1: pool, 2: client, 3: network) and
	// how long until one expires.
	Reserve(ctx context.Context, pool, member string, now, expires time.Time, limit int, client string, perClient int, network string, perNetwork int) (int, time.Duration, error)
	// Release uncounts a member reserved and not handed out.
	Release(ctx context.Context, pool, member, client, network string) error
}

// Names of the limits that fall back to local ones, as OnSharedFallback
// receives them.
const (
	FallbackRate        = "rate"
	FallbackAllocations = "allocations"
)

// sharedLimiter is a Limiter whose decisions Shared takes, and local when
// Shared cannot.
type sharedLimiter struct {
	a                *API
	name             string
	interval, window time.Duration
	local            Limiter
}

// shareLimiter returns the limiter of the named limit at rate and burst:
// local, or local behind Shared when there is one.
func (a *API) shareLimiter(name string, rate float64, burst int, local Limiter) (Limiter, error) {
	if a.cfg.Shared == nil {
		return local, nil
	}
	l, err := ratelimit.NewLimit(rate, burst)
	if err != nil || l.Unlimited() {
		return local, err
	}
	return &sharedLimiter{a: a, name: name, interval: l.Interval(), window: l.Window(), local: local}, nil
}

// Decide implements Limiter.
func (l *sharedLimiter) Decide(ctx context.Context, key string) (bool, time.Duration) {
	ok, retry, err := l.a.cfg.Shared.Allow(ctx, "relay:"+l.name+":"+key, l.interval, l.window)
	if err == nil {
		l.a.sharedBack()
		return ok, retry
	}
	l.a.sharedFallback(FallbackRate, err)
	return l.local.Decide(ctx, key)
}

// Wait implements Limiter.
func (l *sharedLimiter) Wait(ctx context.Context, key string) time.Duration {
	wait, err := l.a.cfg.Shared.Wait(ctx, "relay:"+l.name+":"+key, l.interval, l.window)
	if err == nil {
		l.a.sharedBack()
		return wait
	}
	l.a.sharedFallback(FallbackRate, err)
	return l.local.Wait(ctx, key)
}

// reserve counts an allocation of h on the relay at pool against the
// limits: the shared ones, or this API's own when the store cannot decide.
// release gives the place back.
func (a *API) reserve(ctx context.Context, pool string, alloc *Allocation, h Holder, now time.Time) (reached LimitReached, retry time.Duration, release func()) {
	if a.cfg.Shared != nil {
		member := alloc.ID.String()
		r, retry, err := a.cfg.Shared.Reserve(ctx, pool, member, now, alloc.Expires, a.cfg.MaxAllocations, h.Client, h.PerClient, h.Network, h.PerNetwork)
		if err == nil {
			a.sharedBack()
			return LimitReached(r), retry, func() {
				// Bounded by the store's own timeout.
				if err := a.cfg.Shared.Release(context.WithoutCancel(ctx), pool, member, h.Client, h.Network); err != nil {
					a.cfg.Logger.Warn("relay api: releasing an allocation's place in the shared pool", zap.Error(err))
				}
			}
		}
		a.sharedFallback(FallbackAllocations, err)
	}
	reached, retry = a.cfg.Limiter.Reserve(now, alloc.Expires, a.cfg.MaxAllocations, h)
	return reached, retry, func() { a.cfg.Limiter.Release(alloc.Expires, h) }
}

// sharedFallback counts a decision taken locally because the store could
// not take it, logging the first of an outage.
func (a *API) sharedFallback(limit string, err error) {
	if a.cfg.OnSharedFallback != nil {
		a.cfg.OnSharedFallback(limit)
	}
	if !a.sharedDown.Swap(true) {
		a.cfg.Logger.Warn("relay api: the shared store cannot be reached; this node enforces its limits alone until it can", zap.Error(err))
	}
}

// sharedBack notes a decision the store took, logging the end of an
// outage.
func (a *API) sharedBack() {
	if a.sharedDown.Load() && a.sharedDown.Swap(false) {
		a.cfg.Logger.Info("relay api: the shared store answers again; limits are shared again")
	}
}

// relayEndpoint is the one endpoint of a relay: plain UDP, as gamegate's
// relay speaks neither DTLS nor WebSocket.
func relayEndpoint(host string, port int) APIServerEndpoint {
	return APIServerEndpoint{
		ConnectionType: "udp", Network: "udp", Reliable: false, Secure: false,
		Host: host, Port: port,
	}
}

// splitRelay reads a relay's host:port as stored with an allocation.
func splitRelay(hostport string) (string, int, bool) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil || host == "" {
		return "", 0, false
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false
	}
	return host, port, true
}

// storeUnavailable reports whether err is a store that could not be
// reached or did not answer in time.
func storeUnavailable(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}
