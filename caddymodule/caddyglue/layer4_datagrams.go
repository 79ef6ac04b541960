package caddyglue

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/netaddr"
)

// ServeDatagrams serves protocol v (a dgram.Protocol, or a
// dgram.ListenerScoped resolved here for the association's local address)
// on one caddy-l4 UDP association until the association ends: every layer4
// handler of a datagram protocol is this adapter, with the protocol's logic
// in the protocol. name says what runs, for the error of a route whose
// listener is not a packet listener.
//
// It keeps caddy-l4 v0.1.2's rules (CONTRIBUTING.md, "caddy-l4's UDP model"):
// it reads on the association's goroutine until EOF (readDatagrams), never
// reads or sets deadlines on the shared socket, and sends every datagram,
// to the client or to others, with WriteTo on the shared socket, flushed
// after each datagram. It starts no goroutine: a protocol that must wait
// (an upstream) does so on bounded workers of its own, which write through
// the Writer's Conn.
//
// Every datagram of the association goes to ServeDatagram, not Match: the
// route's matchers chose this handler for the association, and what does
// not belong is the protocol's to drop and count, as it drops anything
// malformed.
func ServeDatagrams(cx *layer4.Connection, v any, name string) error {
	pc, ok := cx.Conn.(net.PacketConn)
	if !ok {
		return fmt.Errorf("%s runs over UDP; this route's listener is not a packet listener", name)
	}
	p, err := dgram.ProtocolAt(v, cx.LocalAddr().String())
	if err != nil {
		return err
	}
	src := netaddr.AddrPortOf(cx.RemoteAddr())
	stats := layer4Stats()
	a := takeAssociation(pc)
	defer a.release()
	return readDatagrams(cx, a.buf[:], func() {
		stats.CountDropped(dgram.DropTooLarge)
	}, func(datagram []byte) {
		stats.CountReceived()
		p.ServeDatagram(a.w, src, datagram)
		a.w.Flush()
		a.w.Report(stats)
	})
}

// association is what serving one caddy-l4 association needs beyond what
// caddy-l4 gives it: a read buffer and a Writer, about 18 KB, taken from a
// pool for the association's life, so a stream of short associations (one
// per source, which anyone can start) does not allocate them anew.
type association struct {
	buf [maxDatagram]byte
	w   *dgram.Writer
}

var associations = sync.Pool{New: func() any {
	return &association{w: dgram.NewWriter(nil)}
}}

// takeAssociation returns the room of an association on pc, whose Writer
// sends through pc. The Conn is the association's own: a protocol's worker
// may keep it after the association ends and its room serves another.
func takeAssociation(pc net.PacketConn) *association {
	a := associations.Get().(*association)
	a.w.Reset(dgram.NewConn(pc))
	return a
}

// release returns a's room to the pool when its association ends.
func (a *association) release() {
	a.w.Reset(nil)
	associations.Put(a)
}

// layer4Stats returns the counts of what the adapter reads and drops
// itself on every caddy-l4 route (oversized first datagrams, replies the
// kernel refused), exported as the gamegate UDP metrics with the listener
// "layer4". They are made with the first association a gamegate handler
// serves on a caddy-l4 route: a process that serves none has no such
// series.
var layer4Stats = sync.OnceValue(func() *dgram.Stats { return UdpStatsOf([]string{"layer4"}) })

// RegisterDatagramMetrics registers a datagram protocol's metrics m, and the
// adapter's own counts (UdpMetrics, listener "layer4"), in the
// configuration's registry.
func RegisterDatagramMetrics(ctx caddy.Context, m *MetricSet) error {
	reg := ctx.GetMetricsRegistry()
	return errors.Join(m.Register(reg), UdpMetrics.Register(reg))
}
