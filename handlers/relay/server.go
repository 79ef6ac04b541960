package relay

import (
	"net/netip"
	"sync"

	"github.com/gamegate/gamegate/dgram"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Server is the relay as a dgram.Protocol: it recognises relay messages by
// their header, applies the Engine's rules to each, and sends what the
// engine says, to the sender or to its peers. Its bindings live in a Table
// that may outlive it (a configuration reload) and may be shared by the
// Servers of several listeners: a client may bind on one and relay on
// another, so a relay has no state per listener.
type Server struct {
	engine *Engine
	count  func(Verdict)
}

// NewServer returns a server for cfg (which should have passed Validate)
// keeping its bindings in table, made with cfg.TableConfig().
func NewServer(cfg Config, table *Table) (*Server, error) {
	cfg = cfg.WithDefaults()
	e, err := NewEngine(cfg, table)
	if err != nil {
		return nil, err
	}
	return &Server{engine: e, count: cfg.Count}, nil
}

// Engine returns the server's engine.
func (s *Server) Engine() *Engine { return s.engine }

// outboxes hold the engine's sends for one datagram; a reader takes one
// per datagram, so nothing is allocated once the pool is warm.
var outboxes = sync.Pool{New: func() any { return NewOutbox() }}

// Match reports whether the datagram starts with a relay header.
func (s *Server) Match(datagram []byte) bool { return wirerelay.LooksLikeMessage(datagram) }

// ServeDatagram relays one datagram, appending what it sends to w.
// Anything malformed is dropped, with its verdict counted.
func (s *Server) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	out := outboxes.Get().(*Outbox)
	s.count(s.engine.Handle(Peer{AddrPort: src}, datagram, out))
	for _, send := range out.Sends {
		w.WriteTo(send.Data, send.To)
	}
	outboxes.Put(out)
}

// Interface guard
var _ dgram.Protocol = (*Server)(nil)
