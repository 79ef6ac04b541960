package relay

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"time"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// ClientKey is the key under which a client's requests are limited and its
// allocations counted: its IPv4 address, or the prefix of ipv6Bits bits
// (0: /64) of its IPv6 address, as package clientaddr keys clients. A text
// that is not an IP address is its own key.
func ClientKey(ip string, ipv6Bits int) string { return clientaddr.KeyString(ip, ipv6Bits) }

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
	join, allocate, joinCode *ratelimit.Table[string]
}

// NewClientRates returns empty rate state reading time from now (nil:
// time.Now).
func NewClientRates(now func() time.Time) *ClientRates {
	clock := ratelimit.NewClock(now)
	return &ClientRates{
		join:     ratelimit.NewTable[string](DefaultMaxClients, clock),
		allocate: ratelimit.NewTable[string](DefaultMaxClients, clock),
		joinCode: ratelimit.NewTable[string](DefaultMaxClients, clock),
	}
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
