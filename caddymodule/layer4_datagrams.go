package caddymodule

import (
	"fmt"
	"net"

	"github.com/mholt/caddy-l4/layer4"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/netaddr"
)

// serveDatagrams serves protocol v (a dgram.Protocol, or a
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
func serveDatagrams(cx *layer4.Connection, v any, name string) error {
	pc, ok := cx.Conn.(net.PacketConn)
	if !ok {
		return fmt.Errorf("%s runs over UDP; this route's listener is not a packet listener", name)
	}
	p, err := dgram.ProtocolAt(v, cx.LocalAddr().String())
	if err != nil {
		return err
	}
	src := netaddr.AddrPortOf(cx.RemoteAddr())
	w := dgram.NewWriter(dgram.NewConn(pc))
	return readDatagrams(cx, func() {}, func(datagram []byte) {
		p.ServeDatagram(w, src, datagram)
		w.Flush()
	})
}
