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
	w.io, w.conn, w.counts = io, conn, counts
	w.out = make([]message, 0, batch)
	w.arena = make([]byte, 0, arenaSize)
}

// Buffer returns an empty slice with room for at least n bytes, to append a
// reply into and pass to WriteTo without a copy. It is valid until the next
// call of Buffer or WriteTo.
func (w *Writer) Buffer(n int) []byte {
	if n > arenaSize {
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
	if len(b) > arenaSize {
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
type Conn struct{ conn *net.UDPConn }

// WriteTo sends b to to at once. The Conn of Dispatch has no socket: its
// writes fail with net.ErrClosed.
func (c *Conn) WriteTo(b []byte, to netip.AddrPort) error {
	if c.conn == nil {
		return net.ErrClosed
	}
	_, err := c.conn.WriteToUDPAddrPort(b, to)
	return err
}
