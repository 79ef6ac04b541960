package caddyrelay

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

func init() {
	caddy.RegisterModule(new(MatchRelay))
}

// MatchRelay matches a UDP association whose first datagram starts with the
// relay protocol's header: signature 0xDA72, version 0 and a known message
// type, so the relay can share a port with other protocols.
type MatchRelay struct{}

// The relay's peek reads the header only.
var relayMatcher = caddyglue.NewDatagramMatcher("relay", wirerelay.HeaderLen, wirerelay.LooksLikeMessage)

// CaddyModule returns the Caddy module information.
func (*MatchRelay) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.relay",
		New: func() caddy.Module { return new(MatchRelay) },
	}
}

// Match looks at the first datagram once, without reading further (see
// DatagramMatcher).
func (m *MatchRelay) Match(cx *layer4.Connection) (bool, error) { return relayMatcher.Match(cx) }

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	relay
func (m *MatchRelay) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return relayMatcher.UnmarshalCaddyfile(d)
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchRelay)(nil)
	_ layer4.ConnMatcher    = (*MatchRelay)(nil)
)
