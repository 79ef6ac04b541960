package caddygqp

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/dgram"
)

func init() {
	caddy.RegisterModule(new(GQPProtocol))
}

// GQPProtocol serves the GQP responder (layer4.handlers.gqp) on a gamegate
// UDP server: same options, same gqp.Responder, whose readers answer what
// needs no upstream and whose few workers wait for an upstream (see
// gqp.Responder).
type GQPProtocol struct{ GQPResponder }

// CaddyModule returns the Caddy module information.
func (*GQPProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.gqp",
		New: func() caddy.Module { return new(GQPProtocol) },
	}
}

// Interface guards
var (
	_ dgram.Protocol        = (*GQPProtocol)(nil)
	_ caddy.Provisioner     = (*GQPProtocol)(nil)
	_ caddy.Validator       = (*GQPProtocol)(nil)
	_ caddy.CleanerUpper    = (*GQPProtocol)(nil)
	_ caddyfile.Unmarshaler = (*GQPProtocol)(nil)
)
