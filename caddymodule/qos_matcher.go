package caddymodule

import (
	"net"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	wireqos "github.com/gamegate/gamegate/wire/qos"
)

func init() {
	caddy.RegisterModule(new(MatchQoS))
}

// MatchQoS matches a UDP association whose first datagram looks like a QoS
// echo request (at most 1500 bytes, magic 0x59, version 0, flow control 0,
// a title length that fits), so QoS can share a port with other protocols.
type MatchQoS struct{}

// CaddyModule returns the Caddy module information.
func (*MatchQoS) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.qos",
		New: func() caddy.Module { return new(MatchQoS) },
	}
}

// One byte more than a request may hold, so an oversized datagram shows.
type matchBuffer [wireqos.MaxPacket + 1]byte

var matchBuffers = sync.Pool{New: func() any { return new(matchBuffer) }}

// Match reads the first datagram once. A datagram too long for caddy-l4's
// matching chunk reads as zero bytes (no frame boundary yet) and does not
// match; nothing here loops on reads.
func (m *MatchQoS) Match(cx *layer4.Connection) (bool, error) {
	if _, ok := cx.Conn.(net.PacketConn); !ok {
		return false, nil
	}
	buf := matchBuffers.Get().(*matchBuffer)
	defer matchBuffers.Put(buf)
	n, err := cx.Read(buf[:])
	if err != nil {
		return false, err // including ErrConsumedAllPrefetchedBytes: caddy-l4 then reads the datagram
	}
	return wireqos.LooksLikeRequest(buf[:n]), nil
}

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	qos
func (m *MatchQoS) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseNoOptions(d, "qos matcher")
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchQoS)(nil)
	_ layer4.ConnMatcher    = (*MatchQoS)(nil)
)
