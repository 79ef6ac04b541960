package relay

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// NetworkKey is the key under which a client's network is limited: the
// /ipv4Bits prefix of its IPv4 address (0: /24) or the /ipv6Bits prefix of
// its IPv6 address (0: /48), as package clientaddr makes networks.
func NetworkKey(ip netip.Addr, ipv4Bits, ipv6Bits int) string {
	return clientaddr.NetworkString(ip, ipv4Bits, ipv6Bits)
}

// ClientKey is the key under which a client's requests are limited and its
// allocations counted: its IPv4 address, or the prefix of ipv6Bits bits
// (0: /64) of its IPv6 address, as package clientaddr keys clients.
func ClientKey(ip netip.Addr, ipv6Bits int) string { return clientaddr.KeyString(ip, ipv6Bits) }

// ownerProof is what ties an allocation to the client that made it: a
// digest of the client's key and the token it presented. /v1/joincode hands
// out a join code only to a request with the same proof, which the shipped
// client sends unchanged: it calls /v1/joincode from where it called
// /v1/allocate, with the same token.
func ownerProof(client string, r *http.Request) string {
	h := sha256.New()
	h.Write([]byte("gamegate relay allocation owner\x00"))
	h.Write([]byte(client))
	h.Write([]byte{0})
	h.Write([]byte(httpauth.Presented(r)))
	return hex.EncodeToString(h.Sum(nil))
}

// A Limiter is one of the API's rate limits: it decides whether one more
// event of a key (a client, a network) is allowed now. LocalLimiter keeps
// the state in this process; an implementation that keeps it in a store
// shared by gateways makes the limit hold across all of them.
type Limiter interface {
	// Decide counts one event of key and reports whether it is allowed. A
	// refused event is not counted; retryAfter is how long until one would
	// be allowed.
	Decide(ctx context.Context, key string) (allowed bool, retryAfter time.Duration)
	// Wait is how long until Decide would allow an event of key, without
	// counting one: 0 if it would now.
	Wait(ctx context.Context, key string) time.Duration
}

// LocalLimiter is a Limiter on a rate table of this process: Limit applies
// to each key's state in Table, and a new key is admitted only while the
// table holds fewer than MaxKeys (see ratelimit.Table.AllowWithin).
type LocalLimiter struct {
	Table   *ratelimit.Table[string]
	Limit   ratelimit.Limit
	MaxKeys int
}

// Decide implements Limiter.
func (l *LocalLimiter) Decide(_ context.Context, key string) (bool, time.Duration) {
	return l.Table.AllowWithin(l.Limit, key, l.MaxKeys)
}

// Wait implements Limiter.
func (l *LocalLimiter) Wait(_ context.Context, key string) time.Duration {
	return l.Table.Wait(l.Limit, key)
}

// The API's rate limits, by the names NewLimiter is given.
const (
	LimitJoin         = "join"          // /v1/join per client
	LimitAllocate     = "allocate"      // /v1/allocate per client
	LimitJoinCode     = "joincode"      // /v1/joincode per client
	LimitJoinNetwork  = "join_network"  // /v1/join per client network
	LimitAuthFailures = "auth_failures" // failed authentications per client network
)

// ClientRates is the per-client request rate state of the API's rate-limited
// endpoints: one table per endpoint (see ratelimit.Table: when a table is
// full of clients that are not idle, new clients are refused). It may be
// shared by APIs and outlive them, so that a configuration reload does not
// hand every client a fresh burst. Each API applies its own rates and its
// own MaxClients to it: an API admits a new client only while the table
// holds fewer than its MaxClients, so sharing changes no API's bounds, and
// nothing an API is configured with changes the state another reads. It is
// safe for concurrent use.
type ClientRates struct {
	join, allocate, joinCode  *ratelimit.Table[string]
	joinNetwork, authFailures *ratelimit.Table[string]
}

// NewClientRates returns empty rate state reading time from now (nil:
// time.Now).
func NewClientRates(now func() time.Time) *ClientRates {
	clock := ratelimit.NewClock(now)
	return &ClientRates{
		join:     ratelimit.NewTable[string](DefaultMaxClients, clock),
		allocate: ratelimit.NewTable[string](DefaultMaxClients, clock),
		joinCode: ratelimit.NewTable[string](DefaultMaxClients, clock),
		// Networks are fewer than clients: the same bound is ample.
		joinNetwork:  ratelimit.NewTable[string](DefaultMaxClients, clock),
		authFailures: ratelimit.NewTable[string](DefaultMaxClients, clock),
	}
}

// Local returns the LocalLimiter of the named limit (one of the Limit
// constants) on this state, applying rate and burst and admitting new keys
// while its table holds fewer than maxKeys.
func (c *ClientRates) Local(name string, rate float64, burst, maxKeys int) (*LocalLimiter, error) {
	var t *ratelimit.Table[string]
	switch name {
	case LimitJoin:
		t = c.join
	case LimitAllocate:
		t = c.allocate
	case LimitJoinCode:
		t = c.joinCode
	case LimitJoinNetwork:
		t = c.joinNetwork
	case LimitAuthFailures:
		t = c.authFailures
	default:
		return nil, fmt.Errorf("no rate limit named %q", name)
	}
	l, err := ratelimit.NewLimit(rate, burst)
	if err != nil {
		return nil, err
	}
	return &LocalLimiter{Table: t, Limit: l, MaxKeys: maxKeys}, nil
}

// Len returns how many clients the table of ep holds.
func (c *ClientRates) Len(ep APIEndpoint) int {
	if t := c.table(ep); t != nil {
		return t.Len()
	}
	return 0
}

// table returns the rate table of ep, nil for an endpoint without one.
func (c *ClientRates) table(ep APIEndpoint) *ratelimit.Table[string] {
	switch ep {
	case EndpointAllocate:
		return c.allocate
	case EndpointJoinCode:
		return c.joinCode
	case EndpointJoin:
		return c.join
	}
	return nil
}

// secureEqual compares two digests of equal length in constant time.
func secureEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
