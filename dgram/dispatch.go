package dgram

import "net/netip"

// offer hands datagram from src to the first of protocols that matches it,
// and reports whether one did. It is the whole of a reader's work on one
// datagram between reading it and flushing w.
func offer(protocols []Protocol, w *Writer, src netip.AddrPort, datagram []byte) bool {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	for _, p := range protocols {
		if p.Match(datagram) {
			p.ServeDatagram(w, src, datagram)
			return true
		}
	}
	return false
}

// Datagram is one datagram a protocol sent, as Dispatch reports it.
type Datagram struct {
	To   netip.AddrPort
	Data []byte
}

// Dispatch serves one datagram from src as a reader does, without a
// socket: it hands it to the first of protocols that matches, and returns
// what the protocol wrote to its Writer, or matched false when no protocol
// matched. Writes through Writer.Conn (a protocol's own workers) fail. It
// is for testing and fuzzing protocols.
func Dispatch(protocols []Protocol, src netip.AddrPort, datagram []byte) (sent []Datagram, matched bool) {
	rec := &recorder{}
	var w Writer
	var counts [numCounts]uint64
	w.init(rec, &Conn{}, 8, &counts)
	matched = offer(protocols, &w, src, datagram)
	w.Flush()
	return rec.sent, matched
}

// recorder is a packetIO that keeps what is written.
type recorder struct{ sent []Datagram }

func (r *recorder) read([]message) (int, error) { return 0, ErrServerClosed }

func (r *recorder) write(out []message) (int, error) {
	for _, m := range out {
		r.sent = append(r.sent, Datagram{To: m.addr, Data: append([]byte(nil), m.buf[:m.n]...)})
	}
	return len(out), nil
}
