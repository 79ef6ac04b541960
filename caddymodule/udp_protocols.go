package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/dgram"
)

// The protocols of the gamegate app's UDP servers are the layer4 handlers
// served per datagram: each embeds its handler, so its configuration,
// Caddyfile syntax, validation, engine, metrics and reload-surviving state
// are the handler's own.

func init() {
	caddy.RegisterModule(new(QoSProtocol))
	caddy.RegisterModule(new(RelayProtocol))
	caddy.RegisterModule(new(GQPProtocol))
}

// QoSProtocol serves the QoS echo handler (layer4.handlers.qos) on a
// gamegate UDP server. Its options are the handler's.
type QoSProtocol struct{ QoSEcho }

// CaddyModule returns the Caddy module information.
func (*QoSProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.qos",
		New: func() caddy.Module { return new(QoSProtocol) },
	}
}

// Provision sets up the handler; unless it has a name, the app then gives
// it the table of its server's listen addresses (ForListener).
func (p *QoSProtocol) Provision(ctx caddy.Context) error {
	p.inApp = true
	return p.QoSEcho.Provision(ctx)
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
	_ dgram.ListenerScoped  = (*QoSProtocol)(nil)
	_ caddy.Provisioner     = (*QoSProtocol)(nil)
	_ caddy.Validator       = (*QoSProtocol)(nil)
	_ caddy.CleanerUpper    = (*QoSProtocol)(nil)
	_ caddyfile.Unmarshaler = (*QoSProtocol)(nil)
	_ dgram.Protocol        = (*RelayProtocol)(nil)
	_ caddy.Provisioner     = (*RelayProtocol)(nil)
	_ caddy.Validator       = (*RelayProtocol)(nil)
	_ caddy.CleanerUpper    = (*RelayProtocol)(nil)
	_ caddyfile.Unmarshaler = (*RelayProtocol)(nil)
	_ dgram.Protocol        = (*GQPProtocol)(nil)
	_ caddy.Provisioner     = (*GQPProtocol)(nil)
	_ caddy.Validator       = (*GQPProtocol)(nil)
	_ caddy.CleanerUpper    = (*GQPProtocol)(nil)
	_ caddyfile.Unmarshaler = (*GQPProtocol)(nil)
)
