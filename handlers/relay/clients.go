package relay

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/netaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// ClientKey is the key under which a client's requests are limited and its
// allocations counted: netaddr.ClientKey of the address. A text that is
// not an IP address is its own key.
func ClientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	return netaddr.ClientKey(a)
}

// remoteIP is the host of r.RemoteAddr, the client address when no server
// in front says otherwise.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

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

// clientRates limits the requests of each client to one endpoint. It holds
// at most max clients; a client is forgotten once its state is idle (it
// could send a full burst again). When the table is full of clients that
// are not idle, new clients are refused until some are: under a flood from
// that many addresses, refusing newcomers is what keeps the limit a limit.
type clientRates struct {
	limit ratelimit.Limit
	clock ratelimit.Clock
	max   int

	mu        sync.Mutex
	states    map[string]*ratelimit.State
	nextSweep int64
}

func newClientRates(rate float64, burst, max int, clock ratelimit.Clock) (*clientRates, error) {
	l, err := ratelimit.NewLimit(rate, burst)
	if err != nil {
		return nil, err
	}
	return &clientRates{limit: l, clock: clock, max: max, states: make(map[string]*ratelimit.State)}, nil
}

// allow admits one request of client, or reports how long until it would
// be admitted.
func (c *clientRates) allow(client string) (bool, time.Duration) {
	if c.limit.Unlimited() {
		return true, 0
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.states[client]
	if s == nil {
		if len(c.states) >= c.max {
			c.sweep(now)
		}
		if len(c.states) >= c.max {
			return false, c.limit.Interval()
		}
		s = new(ratelimit.State)
		c.states[client] = s
	}
	if c.limit.Allow(s, now) {
		return true, 0
	}
	return false, c.limit.Wait(*s, now)
}

// sweep forgets idle clients, at most once per interval of the limit, so a
// full table costs one walk per interval, not one per request.
func (c *clientRates) sweep(now int64) {
	if now < c.nextSweep {
		return
	}
	c.nextSweep = now + int64(c.limit.Interval())
	for k, s := range c.states {
		if s.Idle(now) {
			delete(c.states, k)
		}
	}
}

// len returns how many clients are held.
func (c *clientRates) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.states)
}

// secureEqual compares two digests of equal length in constant time.
func secureEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
