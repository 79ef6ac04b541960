package dgram

import (
	"net"
	"net/netip"
)

// arenaSize is the reply space of one reader: replies are copied into it
// (or appended there directly, see Buffer) and written in one batch.
const arenaSize = 64 << 10

// Writer collects the datagrams a protocol sends while it handles one batch
// of reads, and writes them in as few system calls as the platform allows.
// Each reader has its own; it is not safe for concurrent use. Protocols that
// answer later, from another goroutine, use Conn.
type Writer struct {
	io     packetIO
	conn   *Conn
	out    []message
	arena  []byte
	counts *[numCounts]uint64
}

func (w *Writer) init(io packetIO, conn *Conn, batch int, counts *[numCounts]uint64) {
	w.initArena(io, conn, batch, counts, arenaSize)
}

func (w *Writer) initArena(io packetIO, conn *Conn, batch int, counts *[numCounts]uint64, arena int) {
	w.io, w.conn, w.counts = io, conn, counts
	w.out = make([]message, 0, batch)
	w.arena = make([]byte, 0, arena)
}

// NewWriter returns a Writer that sends through c, one datagram per system
// call, when flushed: what a transport that hands a protocol one datagram
// at a time (a caddy-l4 association) gives ServeDatagram. Flush it after
// each datagram. Its replies are copied into room for one largest datagram;
// longer ones are sent at once.
func NewWriter(c *Conn) *Writer {
	w := new(Writer)
	w.initArena(connIO{c}, c, 4, new([numCounts]uint64), MaxDatagram)
	return w
}

// Reset makes w, a Writer from NewWriter, send through c, forgetting
// anything queued and not flushed, so that one Writer can serve one
// association after another (a pool of them) instead of each allocating
// its own room. What it counted stays until Report.
func (w *Writer) Reset(c *Conn) {
	w.io, w.conn = connIO{c}, c
	w.out = w.out[:0]
	w.arena = w.arena[:0]
}

// Report adds to s what w counted since its last Report (replies it failed
// to send) and starts counting afresh. The gamegate app's readers report
// their own; a transport that hands a Writer from NewWriter one datagram at
// a time reports after each Flush.
func (w *Writer) Report(s *Stats) { s.add(w.counts) }

// connIO writes through a Conn; it reads nothing.
type connIO struct{ c *Conn }

func (c connIO) read([]message) (int, error) { return 0, ErrServerClosed }

func (c connIO) write(out []message) (int, error) {
	for i := range out {
		if err := c.c.WriteTo(out[i].buf[:out[i].n], out[i].addr); err != nil {
			return i, err
		}
	}
	return len(out), nil
}

// Buffer returns an empty slice with room for at least n bytes, to append a
// reply into and pass to WriteTo without a copy. It is valid until the next
// call of Buffer or WriteTo.
func (w *Writer) Buffer(n int) []byte {
	if n > cap(w.arena) {
		return make([]byte, 0, n)
	}
	if cap(w.arena)-len(w.arena) < n {
		w.Flush()
	}
	return w.arena[len(w.arena):len(w.arena)]
}

// WriteTo queues b for to. b is copied unless it was appended to the slice
// Buffer returned; either way the caller may reuse b when WriteTo returns.
func (w *Writer) WriteTo(b []byte, to netip.AddrPort) {
	if len(b) > cap(w.arena) {
		if err := w.conn.WriteTo(b, to); err != nil {
			w.counts[countDropWriteFailed]++
		}
		return
	}
	if len(w.out) == cap(w.out) {
		w.Flush()
	}
	start := len(w.arena)
	tail := w.arena[start:cap(w.arena)]
	if len(b) == 0 || len(tail) == 0 || &b[0] != &tail[0] {
		if len(tail) < len(b) {
			w.Flush()
			start = 0
		}
		w.arena = append(w.arena, b...)
	} else {
		w.arena = w.arena[:start+len(b)]
	}
	w.out = append(w.out, message{buf: w.arena[start:len(w.arena):len(w.arena)], n: len(b), addr: to})
}

// Flush writes what is queued. The server flushes after each batch of reads.
func (w *Writer) Flush() {
	for sent := 0; sent < len(w.out); {
		n, err := w.io.write(w.out[sent:])
		sent += n
		if err != nil || n == 0 {
			// The datagram at sent failed (a full buffer, an unreachable
			// destination): count it and go on with the rest.
			w.counts[countDropWriteFailed]++
			sent++
		}
	}
	w.out = w.out[:0]
	w.arena = w.arena[:0]
}

// Conn returns the socket the datagrams being handled arrived on, for a
// protocol that answers later from its own goroutine.
func (w *Writer) Conn() *Conn { return w.conn }

// Conn is a socket a protocol may write to from any goroutine.
type Conn struct {
	udp *net.UDPConn   // written without allocating
	pc  net.PacketConn // any other packet socket (caddy-l4's)
}

// NewConn returns a Conn that writes through pc: a *net.UDPConn, one that
// wraps it (an Unwrap() net.PacketConn method, as Caddy's listeners have),
// or any other packet socket, such as the shared socket of a caddy-l4 UDP
// association (cx.Conn.(net.PacketConn)), whose WriteTo sends to any
// address without touching the association's reads.
func NewConn(pc net.PacketConn) *Conn {
	if udp, err := udpConnOf(pc); err == nil {
		return &Conn{udp: udp}
	}
	return &Conn{pc: pc}
}

// WriteTo sends b to to at once. The Conn of Dispatch has no socket: its
// writes fail with net.ErrClosed.
func (c *Conn) WriteTo(b []byte, to netip.AddrPort) error {
	switch {
	case c.udp != nil:
		_, err := c.udp.WriteToUDPAddrPort(b, to)
		return err
	case c.pc != nil:
		_, err := c.pc.WriteTo(b, net.UDPAddrFromAddrPort(to))
		return err
	}
	return net.ErrClosed
}
