package caddyrelay

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/dgram"
)

func init() {
	caddy.RegisterModule(new(RelayProtocol))
}

// RelayProtocol serves the relay handler (layer4.handlers.relay) on a
// gamegate UDP server. Its options are the handler's; both share binding
// tables by name.
type RelayProtocol struct{ Relay }

// CaddyModule returns the Caddy module information.
func (*RelayProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.relay",
		New: func() caddy.Module { return new(RelayProtocol) },
	}
}

// Interface guards
var (
	_ dgram.Protocol        = (*RelayProtocol)(nil)
	_ caddy.Provisioner     = (*RelayProtocol)(nil)
	_ caddy.Validator       = (*RelayProtocol)(nil)
	_ caddy.CleanerUpper    = (*RelayProtocol)(nil)
	_ caddyfile.Unmarshaler = (*RelayProtocol)(nil)
)
