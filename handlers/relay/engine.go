// Package relay is gamegate's Unity Relay service, free of Caddy: the engine
// that binds clients to allocations and relays their messages, the sealed
// connection data that lets any relay holding the secret validate a BIND,
// and a client that behaves as the shipped Unity Transport client does.
package relay

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Peer is a client's address (an unmapped IP address and a port). It is a
// plain value, so a datagram server hands one to Handle without allocating.
type Peer struct {
	AddrPort netip.AddrPort
}

// Send is one datagram the engine wants sent.
type Send struct {
	To   netip.AddrPort
	Data []byte // aliases the request or the Outbox's scratch space
}

// Outbox collects what one call to Handle sends. Reuse one per goroutine:
// it allocates nothing once made.
type Outbox struct {
	Sends   []Send
	scratch [64]byte
}

// NewOutbox returns an empty Outbox.
func NewOutbox() *Outbox { return &Outbox{Sends: make([]Send, 0, 2)} }

func (o *Outbox) reset() { o.Sends = o.Sends[:0] }

func (o *Outbox) send(to netip.AddrPort, b []byte) { o.Sends = append(o.Sends, Send{To: to, Data: b}) }

// Verdict is what the engine did with one datagram, for metrics.
type Verdict uint8

// Verdicts.
const (
	Bound               Verdict = iota // BIND accepted (new binding, same address or moved)
	Pinged                             // PING echoed
	Accepted                           // CONNECT_REQUEST accepted
	Rejected                           // CONNECT_REQUEST rejected: the host is at max connections
	Relayed                            // RELAY forwarded
	Disconnected                       // DISCONNECT forwarded and confirmed
	Closed                             // CLOSE unbound the sender (or it was already unbound)
	ErrorSent                          // answered with an ERROR
	DroppedMalformed                   // not a well-formed relay message
	DroppedAuth                        // BIND with connection data that does not open, or a bad HMAC
	DroppedNonce                       // BIND with a nonce that is not allowed
	DroppedFull                        // BIND of a new allocation with the binding table full
	DroppedTooLarge                    // RELAY content over MaxContent
	DroppedUnanswerable                // an error that cannot be answered without amplification
	DroppedUnexpected                  // a message type clients do not send
	DroppedBindNetwork                 // BIND from outside the network its allocation is bound to
	NumVerdicts
)

var verdictNames = [NumVerdicts]string{
	"bound", "pinged", "accepted", "rejected", "relayed", "disconnected", "closed", "error_sent",
	"malformed", "auth", "nonce", "table_full", "too_large", "unanswerable", "unexpected",
	"bind_network",
}

func (v Verdict) String() string {
	if v < NumVerdicts {
		return verdictNames[v]
	}
	return "unknown"
}

// Engine implements the relay's rules. It is safe for concurrent use: each
// client's datagrams may be handled on its own goroutine.
type Engine struct {
	cfg            Config // with defaults
	nonceBigEndian bool
	table          *Table
}

// NewEngine returns an engine keeping its bindings in table, which may be
// shared with other engines (across configuration reloads). cfg's zero
// fields take their defaults; cfg should have passed Validate, which
// NewEngine does not repeat. Its Sealer is required.
func NewEngine(cfg Config, table *Table) (*Engine, error) {
	if cfg.Sealer == nil {
		return nil, errors.New("a sealer is required")
	}
	cfg = cfg.WithDefaults()
	return &Engine{cfg: cfg, nonceBigEndian: cfg.NonceByteOrder == NonceBigEndian, table: table}, nil
}

// Table returns the engine's binding table.
func (e *Engine) Table() *Table { return e.table }

// Handle applies the relay's rules to one datagram from src and fills out
// with what to send. Nothing larger than the datagram is ever sent to an
// address that is not bound.
func (e *Engine) Handle(src Peer, datagram []byte, out *Outbox) Verdict {
	out.reset()
	t, err := wirerelay.PeekHeader(datagram)
	if err != nil {
		if errors.Is(err, wirerelay.ErrVersion) {
			return e.replyError(src, datagram, idAt(datagram), wirerelay.CodeInvalidProtocolVersion, out)
		}
		return DroppedMalformed
	}
	switch t {
	case wirerelay.TypeRelay:
		return e.relay(src, datagram, out)
	case wirerelay.TypePing:
		return e.ping(src, datagram, out)
	case wirerelay.TypeBind:
		return e.bind(src, datagram, out)
	case wirerelay.TypeConnectRequest:
		return e.connect(src, datagram, out)
	case wirerelay.TypeDisconnect:
		return e.disconnect(src, datagram, out)
	case wirerelay.TypeClose:
		return e.close(src, datagram)
	}
	return DroppedUnexpected
}

// idAt reads the allocation ID that follows the header in most messages,
// for error replies to messages that did not decode.
func idAt(b []byte) wirerelay.AllocationID {
	var id wirerelay.AllocationID
	if len(b) >= wirerelay.HeaderLen+16 {
		copy(id[:], b[wirerelay.HeaderLen:])
	}
	return id
}

// replyError answers src with an ERROR, unless that would send an unbound
// address more than it sent.
func (e *Engine) replyError(src Peer, req []byte, id wirerelay.AllocationID, code wirerelay.ErrorCode, out *Outbox) Verdict {
	msg := wirerelay.Error{AllocationID: id, Code: code}
	if msg.Len() > len(req) && !e.table.isBoundAt(id, src.AddrPort) {
		return DroppedUnanswerable
	}
	b, _ := msg.AppendTo(out.scratch[:0])
	out.send(src.AddrPort, b)
	return ErrorSent
}

func (e *Engine) relay(src Peer, datagram []byte, out *Outbox) Verdict {
	var m wirerelay.Relay
	if m.Decode(datagram) != nil {
		return DroppedMalformed
	}
	if len(m.Content) > e.cfg.MaxContent {
		return DroppedTooLarge
	}
	dst, code := e.table.relayTarget(m.From, src.AddrPort, m.To)
	if !dst.IsValid() {
		e.table.expireLater(m.From, m.To)
		return e.replyError(src, datagram, m.From, code, out)
	}
	out.send(dst, datagram)
	return Relayed
}

func (e *Engine) ping(src Peer, datagram []byte, out *Outbox) Verdict {
	var m wirerelay.Ping
	if m.Decode(datagram) != nil {
		return DroppedMalformed
	}
	if code := e.table.ping(m.AllocationID, src.AddrPort); code != 0 {
		e.table.expireLater(m.AllocationID)
		return e.replyError(src, datagram, m.AllocationID, code, out)
	}
	out.send(src.AddrPort, datagram)
	return Pinged
}

func (e *Engine) bind(src Peer, datagram []byte, out *Outbox) Verdict {
	var m wirerelay.Bind
	if m.DecodeWith(datagram, wirerelay.Options{NonceBigEndian: e.nonceBigEndian}) != nil {
		return DroppedMalformed
	}
	var a Allocation
	if e.cfg.Sealer.Open(m.ConnectionData, &a) != nil {
		return DroppedAuth
	}
	if wirerelay.Verify(datagram, a.Key[:]) != nil {
		return DroppedAuth
	}
	// Whoever holds an allocation's key could otherwise bind it at any
	// address, a forged one included, and have its peers' traffic sent
	// there.
	if a.BindNetwork.IsValid() && !a.BindNetwork.Contains(src.AddrPort.Addr()) {
		return DroppedBindNetwork
	}
	v := e.table.bind(&a, src, m.Nonce)
	switch v {
	case Bound:
		b, _ := (&wirerelay.BindReceived{}).AppendTo(out.scratch[:0])
		out.send(src.AddrPort, b)
	case ErrorSent:
		// The allocation may no longer be bound for the first time.
		return e.replyError(src, datagram, a.ID, wirerelay.CodeAllocationNotFound, out)
	}
	return v
}

func (e *Engine) connect(src Peer, datagram []byte, out *Outbox) Verdict {
	var m wirerelay.ConnectRequest
	if m.Decode(datagram) != nil {
		return DroppedMalformed
	}
	var host Allocation
	if e.cfg.Sealer.Open(m.ToConnectionData, &host) != nil {
		return e.replyError(src, datagram, m.AllocationID, wirerelay.CodeAllocationNotFound, out)
	}
	if host.ID == m.AllocationID {
		return e.replyError(src, datagram, m.AllocationID, wirerelay.CodeSelfConnectNotAllowed, out)
	}
	v, code := e.table.connect(m.AllocationID, src.AddrPort, host.ID)
	switch v {
	case ErrorSent:
		return e.replyError(src, datagram, m.AllocationID, code, out)
	case Accepted:
		b, _ := (&wirerelay.Accepted{From: host.ID, To: m.AllocationID}).AppendTo(out.scratch[:0])
		out.send(src.AddrPort, b)
	case Rejected:
		b, _ := (&wirerelay.Rejected{From: host.ID, To: m.AllocationID}).AppendTo(out.scratch[:0])
		out.send(src.AddrPort, b)
	}
	return v
}

func (e *Engine) disconnect(src Peer, datagram []byte, out *Outbox) Verdict {
	var m wirerelay.Disconnect
	if m.Decode(datagram) != nil {
		return DroppedMalformed
	}
	target, code := e.table.disconnect(m.From, src.AddrPort, m.To)
	if code != 0 || !target.IsValid() {
		if code == 0 {
			code = wirerelay.CodeAllocationNotFound
		}
		return e.replyError(src, datagram, m.From, code, out)
	}
	out.send(target, datagram)       // the peer learns of it
	out.send(src.AddrPort, datagram) // and the sender has its confirmation
	return Disconnected
}

func (e *Engine) close(src Peer, datagram []byte) Verdict {
	var m wirerelay.Close
	if m.Decode(datagram) != nil {
		return DroppedMalformed
	}
	e.table.close(m.AllocationID, src.AddrPort)
	return Closed
}

// Binding ties an allocation to the address its client sends from. Its
// nonce and peer set are guarded by its table shard's lock; the rest is
// fixed or atomic.
type Binding struct {
	id             wirerelay.AllocationID
	maxConnections int
	expires        time.Time // the allocation's expiry
	peer           atomic.Pointer[Peer]
	lastActivity   atomic.Int64 // table time, nanoseconds
	everConnected  atomic.Bool  // a peer has been connected since the binding began
	ended          atomic.Bool  // the binding has left the table
	nonce          uint16
	peers          map[wirerelay.AllocationID]*Binding // connected peers
}

func (b *Binding) touch(now int64) {
	if b.lastActivity.Load() < now {
		b.lastActivity.Store(now)
	}
}

// expired reports whether b has been idle past its timeout: the alone
// timeout until it is first connected, the idle timeout after.
func (b *Binding) expired(now int64, t *Table) bool {
	limit := t.idle
	if !b.everConnected.Load() {
		limit = t.alone
	}
	return now-b.lastActivity.Load() > limit
}
