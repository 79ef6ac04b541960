package caddymodule

import (
	"net"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

func init() {
	caddy.RegisterModule(new(MatchGQP))
}

// MatchGQP matches a UDP association whose first datagram looks like a GQP
// query (a command's name first and EOT last, or an encoding header), so
// GQP can share a port with other protocols.
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
	return wiregqp.LooksLikeQuery(buf[:n]), nil
}

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	gqp
func (m *MatchGQP) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseNoOptions(d, "gqp matcher")
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchGQP)(nil)
	_ layer4.ConnMatcher    = (*MatchGQP)(nil)
)
