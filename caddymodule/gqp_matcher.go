package caddymodule

import (
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

func init() {
	caddy.RegisterModule(new(MatchGQP))
}

// MatchGQP matches a UDP association whose first datagram is a GQP query
// (one that decodes, or one in an encoding the responder will refuse with
// status 40), so GQP can share a port with other protocols.
type MatchGQP struct{}

// CaddyModule returns the Caddy module information.
func (*MatchGQP) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.gqp",
		New: func() caddy.Module { return new(MatchGQP) },
	}
}

type gqpMatchBuffer [wiregqp.MaxQuery + 1]byte

var gqpMatchBuffers = sync.Pool{New: func() any { return new(gqpMatchBuffer) }}

// Match reads the first datagram once.
func (m *MatchGQP) Match(cx *layer4.Connection) (bool, error) {
	if _, ok := cx.Conn.(net.PacketConn); !ok {
		return false, nil
	}
	buf := gqpMatchBuffers.Get().(*gqpMatchBuffer)
	defer gqpMatchBuffers.Put(buf)
	n, err := cx.Read(buf[:])
	if err != nil {
		return false, err // ErrConsumedAllPrefetchedBytes: caddy-l4 reads the datagram first
	}
	return matchesGQP(buf[:n]), nil
}

// matchesGQP reports whether a datagram is a GQP query: one that decodes,
// or one in an encoding the responder refuses with status 40.
func matchesGQP(datagram []byte) bool {
	if len(datagram) == 0 || len(datagram) > wiregqp.MaxQuery {
		return false
	}
	var q wiregqp.Query
	err := q.Decode(datagram)
	return err == nil || errors.Is(err, wiregqp.ErrUnsupportedEncoding)
}

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	gqp
func (m *MatchGQP) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseNoOptions(d, "gqp matcher")
}

func gqpSource(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		ap := u.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchGQP)(nil)
	_ layer4.ConnMatcher    = (*MatchGQP)(nil)
)
