package caddymodule

import (
	"net"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

func init() {
	caddy.RegisterModule(new(MatchRelay))
}

// MatchRelay matches a UDP association whose first datagram starts with the
// relay protocol's header: signature 0xDA72, version 0 and a known message
// type, so the relay can share a port with other protocols.
type MatchRelay struct{}

// CaddyModule returns the Caddy module information.
func (*MatchRelay) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.relay",
		New: func() caddy.Module { return new(MatchRelay) },
	}
}

// Match looks at the first datagram once, without reading further.
func (m *MatchRelay) Match(cx *layer4.Connection) (bool, error) {
	if _, ok := cx.Conn.(net.PacketConn); !ok {
		return false, nil
	}
	var hdr [wirerelay.HeaderLen]byte
	n, err := cx.Read(hdr[:])
	if err != nil {
		return false, err // ErrConsumedAllPrefetchedBytes: caddy-l4 reads the datagram first
	}
	return wirerelay.LooksLikeMessage(hdr[:n]), nil
}

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	relay
func (m *MatchRelay) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseNoOptions(d, "relay matcher")
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchRelay)(nil)
	_ layer4.ConnMatcher    = (*MatchRelay)(nil)
)
