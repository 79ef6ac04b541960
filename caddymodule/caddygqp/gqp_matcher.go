package caddygqp

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

func init() {
	caddy.RegisterModule(new(MatchGQP))
}

// MatchGQP matches a UDP association whose first datagram looks like a GQP
// query (a command's name first and EOT last, or an encoding header), so
// GQP can share a port with other protocols.
type MatchGQP struct{}

var gqpMatcher = caddyglue.NewDatagramMatcher("gqp", wiregqp.MaxQuery+1, wiregqp.LooksLikeQuery)

// CaddyModule returns the Caddy module information.
func (*MatchGQP) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.gqp",
		New: func() caddy.Module { return new(MatchGQP) },
	}
}

// Match reads the first datagram once (see DatagramMatcher).
func (m *MatchGQP) Match(cx *layer4.Connection) (bool, error) { return gqpMatcher.Match(cx) }

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	gqp
func (m *MatchGQP) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return gqpMatcher.UnmarshalCaddyfile(d)
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchGQP)(nil)
	_ layer4.ConnMatcher    = (*MatchGQP)(nil)
)
