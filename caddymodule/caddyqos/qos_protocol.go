package caddyqos

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/dgram"
)

func init() {
	caddy.RegisterModule(new(QoSProtocol))
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

// Interface guards
var (
	_ dgram.ListenerScoped  = (*QoSProtocol)(nil)
	_ caddy.Provisioner     = (*QoSProtocol)(nil)
	_ caddy.Validator       = (*QoSProtocol)(nil)
	_ caddy.CleanerUpper    = (*QoSProtocol)(nil)
	_ caddyfile.Unmarshaler = (*QoSProtocol)(nil)
)
