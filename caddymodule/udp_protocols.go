package caddymodule

import (
	"net/netip"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/handlers/relay"
	wireqos "github.com/gamegate/gamegate/wire/qos"
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
// it the table of its server's listen addresses (useListener).
func (p *QoSProtocol) Provision(ctx caddy.Context) error {
	p.inApp = true
	return p.QoSEcho.Provision(ctx)
}

// Match reports whether the datagram is a QoS echo request.
func (p *QoSProtocol) Match(datagram []byte) bool { return matchesQoS(datagram) }

// ServeDatagram answers one QoS request, appending the response to w.
func (p *QoSProtocol) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	source := qos.SourceOfAddrPort(src, p.byPort)
	resp, v := p.engine.Handle(source, datagram, w.Buffer(wireqos.MaxPacket))
	qosMetrics.count(v)
	if v == qos.BannedRate || v == qos.BannedCapacity {
		if ce := p.logger.Check(zap.DebugLevel, "banned QoS source"); ce != nil {
			ce.Write(zap.Stringer("source", source), zap.Stringer("cause", v))
		}
	}
	if resp != nil {
		w.WriteTo(resp, src)
	}
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

// outboxes hold the relay engine's sends for one datagram; a reader takes
// one per datagram, so nothing is allocated once the pool is warm.
var outboxes = sync.Pool{New: func() any { return relay.NewOutbox() }}

// Match reports whether the datagram starts with a relay header.
func (p *RelayProtocol) Match(datagram []byte) bool { return matchesRelay(datagram) }

// ServeDatagram relays one datagram, appending what it sends to w.
func (p *RelayProtocol) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	out := outboxes.Get().(*relay.Outbox)
	v := p.engine.Handle(relay.Peer{AddrPort: src}, datagram, out)
	relayMetrics.datagrams.count(v)
	for _, s := range out.Sends {
		w.WriteTo(s.Data, s.To)
	}
	outboxes.Put(out)
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

// Match reports whether the datagram may be a GQP query.
func (p *GQPProtocol) Match(datagram []byte) bool { return p.responder.Match(datagram) }

// ServeDatagram answers the query, or queues it for a worker.
func (p *GQPProtocol) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	p.responder.ServeDatagram(w, src, datagram)
}

// Interface guards
var (
	_ dgram.Protocol        = (*QoSProtocol)(nil)
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
