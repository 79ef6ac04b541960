package caddyqos

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

func init() {
	caddy.RegisterModule(new(MatchQoS))
}

// MatchQoS matches a UDP association whose first datagram looks like a QoS
// echo request (at most 1500 bytes, magic 0x59, version 0, flow control 0,
// a title length that fits), so QoS can share a port with other protocols.
type MatchQoS struct{}

var qosMatcher = caddyglue.NewDatagramMatcher("qos", wireqos.MaxPacket+1, wireqos.LooksLikeRequest)

// CaddyModule returns the Caddy module information.
func (*MatchQoS) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.qos",
		New: func() caddy.Module { return new(MatchQoS) },
	}
}

// Match reads the first datagram once (see DatagramMatcher).
func (m *MatchQoS) Match(cx *layer4.Connection) (bool, error) { return qosMatcher.Match(cx) }

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	qos
func (m *MatchQoS) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return qosMatcher.UnmarshalCaddyfile(d)
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchQoS)(nil)
	_ layer4.ConnMatcher    = (*MatchQoS)(nil)
)
