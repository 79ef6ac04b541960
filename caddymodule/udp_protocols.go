package caddymodule

import (
	"context"
	"net/netip"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/dgram"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
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
// UDP server. Its options are the responder's. The reader answers what
// needs no upstream (built-in and static commands, cached answers) at
// once. A query that needs a command's HTTP upstream waits for a few
// workers behind a bounded queue, and only if its source is trusted or has
// validated: spoofed sources cannot fill the queue, and other sources'
// queries are dropped while the upstream request they started runs (their
// retry finds the answer cached). Drops are counted by reason in
// gamegate_gqp_dropped_total; the readers never wait.
type GQPProtocol struct {
	GQPResponder

	free    chan *gqpJob // jobs not in use: the queue's bound
	workers workers[*gqpJob]
}

// gqpJob is one query waiting for a worker, in a buffer allocated once.
type gqpJob struct {
	conn  *dgram.Conn
	src   netip.AddrPort
	n     int
	query [wiregqp.MaxQuery]byte
}

const (
	gqpWorkers  = 4  // queries answered at once (each may wait for an upstream)
	gqpQueueCap = 64 // queries waiting, from all sources
)

// CaddyModule returns the Caddy module information.
func (*GQPProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.gqp",
		New: func() caddy.Module { return new(GQPProtocol) },
	}
}

// Provision builds the responder and starts its workers.
func (p *GQPProtocol) Provision(ctx caddy.Context) error {
	if err := p.GQPResponder.Provision(ctx); err != nil {
		return err
	}
	p.free = make(chan *gqpJob, gqpQueueCap)
	for range gqpQueueCap {
		p.free <- new(gqpJob)
	}
	p.workers.start(gqpWorkers, gqpQueueCap, p.answer, func(j *gqpJob) {
		gqpMetrics.drops.count(gqpDropStopped)
		p.release(j)
	})
	return nil
}

// Cleanup stops the workers, then ends the upstream requests: queries
// waiting for an upstream are dropped, so a reload or stop does not wait
// for it, and the upstream requests end with the configuration. In that
// order, so that no worker takes a request's end for an answer to send.
func (p *GQPProtocol) Cleanup() error {
	p.workers.close()
	return p.GQPResponder.Cleanup()
}

// Match reports whether the datagram is a GQP query.
func (p *GQPProtocol) Match(datagram []byte) bool { return matchesGQP(datagram) }

// ServeDatagram answers the query, or queues it for a worker when it needs
// an upstream (see GQPProtocol).
func (p *GQPProtocol) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	if len(datagram) > wiregqp.MaxQuery {
		gqpMetrics.drops.count(gqpDropTooLarge)
		return
	}
	if out, v, done := p.server.AnswerNow(src, datagram); done {
		gqpMetrics.queries.count(v)
		for _, d := range out {
			w.WriteTo(d, src)
		}
		return
	}
	if !p.server.Trusted(src.Addr()) && !p.server.Authorized(src) {
		gqpMetrics.drops.count(gqpDropUnvalidated)
		return
	}
	var j *gqpJob
	select {
	case j = <-p.free:
	default:
		gqpMetrics.drops.count(gqpDropQueueFull)
		return
	}
	j.conn, j.src, j.n = w.Conn(), src, copy(j.query[:], datagram)
	if !p.workers.offer(j) { // the queue has a slot for every job, so this is not expected
		p.release(j)
		gqpMetrics.drops.count(gqpDropQueueFull)
	}
}

func (p *GQPProtocol) answer(stop context.Context, j *gqpJob) {
	ctx, cancel := context.WithTimeout(stop, p.answerTimeout())
	out, v := p.server.Answer(ctx, j.src, j.query[:j.n])
	cancel()
	if stop.Err() != nil {
		// Cut short by a reload or stop: the readers are gone and their
		// socket closed, so there is no one to send an answer through.
		gqpMetrics.drops.count(gqpDropStopped)
		p.release(j)
		return
	}
	gqpMetrics.queries.count(v)
	for _, d := range out {
		if err := j.conn.WriteTo(d, j.src); err != nil {
			gqpMetrics.writeFailed(p.logger, j.src, err)
		}
	}
	p.release(j)
}

// release returns j to the free list.
func (p *GQPProtocol) release(j *gqpJob) {
	j.conn = nil
	p.free <- j
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
