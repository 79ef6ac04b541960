// Package dgram serves UDP datagrams to protocols, free of Caddy and of any
// protocol's logic: it owns the sockets' readers, batched reads and writes,
// socket buffer sizing and the server's drop counters. A protocol plugs in
// through Protocol (does this datagram belong to me; handle it, appending
// replies), the way net/http serves any Handler.
//
// The work per datagram is read, match, handle, write, on the reader's
// goroutine. The server creates no goroutine, buffer or map entry per
// source: whatever per-source state a protocol keeps is its own, bounded
// table. Nothing a protocol is handed may block: work that may (an HTTP
// upstream) goes to a bounded queue of the protocol's own that drops when
// full.
//
// # Transports
//
// A Protocol does not know what reads its datagrams. Server is one
// transport: its readers (its own, or those of an Endpoint it is attached
// to) read sockets, offer each datagram to each protocol's Match and hand
// it to the first that matches. Another is a
// caddy-l4 UDP route: caddy-l4 reads the socket and hands each client
// address's datagrams, one at a time, to that address's goroutine, where an
// adapter calls ServeDatagram with a Writer from NewWriter over NewConn of
// the route's shared socket, and flushes it after each datagram. A route's
// matchers choose its handler for a whole association (they call the
// protocol's peek on the first datagram), so under caddy-l4 ServeDatagram
// also receives datagrams that Match would refuse: it must drop them, as
// it must drop anything malformed that passes Match. Match is a cheap peek
// at fixed offsets; ServeDatagram decodes, once.
//
// # State per listener
//
// A protocol whose state (a table of sources, say) belongs to the listener
// it serves on, unless its configuration names a shared one, implements
// ListenerScoped instead of (or beside) Protocol. Every transport resolves
// what it was configured with through ProtocolAt before it hands over a
// datagram from a listener, and serves the Protocol that returns there:
// Server's owner (the gamegate app) once per server, with the server's
// listen addresses as configured joined by commas; the caddy-l4 adapter
// once per association, with the association's local address
// (cx.LocalAddr().String()), so ForListener keeps what it returns per
// listener name. A protocol with no such state (the relay, whose bindings
// are shared by name across listeners) is a plain Protocol.
package dgram

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// MaxDatagram is the largest datagram the server hands to a protocol, in
// bytes; longer ones are dropped (DropTooLarge).
const MaxDatagram = 9000

// Protocol is one datagram protocol served on a socket. Its methods are
// called concurrently from every reader and must not block.
type Protocol interface {
	// Match reports whether datagram belongs to this protocol. The server
	// hands each datagram to the first protocol that matches.
	Match(datagram []byte) bool
	// ServeDatagram handles one datagram from src, appending what it sends
	// to w. The datagram is valid only during the call.
	ServeDatagram(w *Writer, src netip.AddrPort, datagram []byte)
}

// ListenerScoped makes the Protocol of each listener, for a protocol whose
// state belongs to the listener that serves it (see "State per listener"
// in the package documentation).
type ListenerScoped interface {
	// ForListener returns the protocol to serve on the listener named
	// listener (its address, or its addresses joined by commas). It may
	// return the same value for every listener, and is called once per
	// caddy-l4 association: return what was made for the name before.
	ForListener(listener string) (Protocol, error)
}

// ProtocolAt returns what serves on the listener named listener: v's
// ForListener if v is ListenerScoped, else v itself if it is a Protocol.
// Every transport resolves a configured protocol through it.
func ProtocolAt(v any, listener string) (Protocol, error) {
	if ls, ok := v.(ListenerScoped); ok {
		return ls.ForListener(listener)
	}
	if p, ok := v.(Protocol); ok {
		return p, nil
	}
	return nil, fmt.Errorf("dgram: %T is not a datagram protocol", v)
}

// Server is what a configuration serves: its protocols, and where its
// readers count what they read and drop. It reads sockets of its own with
// Serve, or is attached to an Endpoint whose sockets and readers outlive
// it (a configuration reload hands them from one Server to the next).
// Configure it before the first Serve or Attach; it is safe for concurrent
// use then.
type Server struct {
	// Protocols in the order they are offered each datagram.
	Protocols []Protocol
	// Batch is how many datagrams one system call reads or writes where
	// the platform can (recvmmsg and sendmmsg on Linux); 1 reads one at a
	// time. Serve's; an Endpoint has its own. Default: DefaultBatch.
	Batch int
	// ReadBuffer and WriteBuffer are the socket buffer sizes asked of the
	// kernel for the sockets given to Serve, in bytes; 0 leaves the
	// system's default. See EndpointConfig.
	ReadBuffer, WriteBuffer int
	// Stats counts what the server's readers read and drop; several
	// servers may share one. Default: a Stats of its own.
	Stats *Stats
	// Logger receives warnings and debug messages. Default: none.
	Logger *zap.Logger

	initOnce sync.Once
	// own reads the sockets given to Serve.
	own *Endpoint
	// newIO makes each reader's I/O of own; nil: newPacketIO. Tests set
	// it to make a socket fail. steerWindow is own's steering window.
	newIO       func(conn *net.UDPConn, batch int) packetIO
	steerWindow time.Duration
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("dgram: server closed")

func (s *Server) init() {
	s.initOnce.Do(func() {
		if s.Batch <= 0 {
			s.Batch = DefaultBatch
		}
		if s.Stats == nil {
			s.Stats = new(Stats)
		}
		if s.Logger == nil {
			s.Logger = zap.NewNop()
		}
		s.own = NewEndpoint(EndpointConfig{Batch: s.Batch, ReadBuffer: s.ReadBuffer, WriteBuffer: s.WriteBuffer, Logger: s.Logger})
		s.own.newIO, s.own.steerWindow = s.newIO, s.steerWindow
		s.own.attach(s)
	})
}

// Serve reads pc with one reader on the calling goroutine until pc is
// closed or Close is called; it returns ErrServerClosed then. pc must be a
// *net.UDPConn or wrap one (an Unwrap() net.PacketConn method, as Caddy's
// listeners have). Call Serve several times, on one socket or on several
// SO_REUSEPORT sockets of one address, for several readers. Serve owns pc:
// Close closes it, and a pc that Serve refuses (after Close, or not a UDP
// socket) is closed at once, so that no socket stays bound with no reader
// (the kernel would keep sending it a share of the port's datagrams).
func (s *Server) Serve(pc net.PacketConn) error {
	s.init()
	r, err := s.own.register(pc)
	if err != nil {
		return err
	}
	return r.serve()
}

// Close stops the readers of Serve, closes every socket given to it, and
// returns when the readers have returned.
func (s *Server) Close() error {
	s.init()
	return s.own.Close()
}

// SizeBuffers sets pc's buffers to ReadBuffer and WriteBuffer before pc is
// given to Serve (which then leaves them), and returns what the kernel
// granted, for the caller to report. pc must be one Serve takes.
func (s *Server) SizeBuffers(pc net.PacketConn) (Buffers, error) {
	s.init()
	conn, err := udpConnOf(pc)
	if err != nil {
		return Buffers{}, err
	}
	got := s.own.sizeBuffers(conn)
	s.own.mu.Lock()
	s.own.sized[conn] = true
	s.own.mu.Unlock()
	return got, nil
}

func udpConnOf(pc net.PacketConn) (*net.UDPConn, error) {
	for range 8 {
		switch c := pc.(type) {
		case *net.UDPConn:
			return c, nil
		case interface{ Unwrap() net.PacketConn }:
			pc = c.Unwrap()
		default:
			return nil, errors.New("dgram: not a UDP socket")
		}
	}
	return nil, errors.New("dgram: not a UDP socket")
}

// Buffers are a socket's buffer sizes in bytes, as the kernel granted them
// (0: left as the system's default).
type Buffers struct {
	Read, Write int
}

// retryable reports whether a read error concerns one earlier datagram (an
// ICMP error reported on the socket), not the socket.
func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, syscall.EMSGSIZE)
}
