package dgram

import "sync/atomic"

// DropReason is why the server dropped a datagram itself, before or after a
// protocol handled it. Drops decided by a protocol are the protocol's to
// count.
type DropReason uint8

// Drop reasons.
const (
	DropNoProtocol  DropReason = iota // no protocol matched it
	DropTooLarge                      // longer than MaxDatagram
	DropWriteFailed                   // a reply the kernel refused to send
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"no_protocol", "too_large", "write_failed"}

func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Reader-local counts, added to a Stats once per batch.
const (
	countReceived = iota
	countDropNoProtocol
	countDropTooLarge
	countDropWriteFailed
	numCounts
)

// Stats counts datagrams across servers and readers. The zero value is
// ready; read it with Received and Dropped.
type Stats struct {
	counts [numCounts]struct {
		n atomic.Uint64
		_ [56]byte // one cache line each: every reader adds to them
	}
}

func (s *Stats) add(c *[numCounts]uint64) {
	for i, v := range c {
		if v != 0 {
			s.counts[i].n.Add(v)
			c[i] = 0
		}
	}
}

// CountReceived counts one datagram read by a transport that reads for
// itself (a caddy-l4 association), and CountDropped one it dropped for r.
func (s *Stats) CountReceived() { s.counts[countReceived].n.Add(1) }

// CountDropped counts one datagram dropped for r; see CountReceived.
func (s *Stats) CountDropped(r DropReason) {
	if r < NumDropReasons {
		s.counts[countDropNoProtocol+int(r)].n.Add(1)
	}
}

// Received is how many datagrams the readers have read.
func (s *Stats) Received() uint64 { return s.counts[countReceived].n.Load() }

// Dropped is how many datagrams the server dropped for reason r.
func (s *Stats) Dropped(r DropReason) uint64 {
	if r >= NumDropReasons {
		return 0
	}
	return s.counts[countDropNoProtocol+int(r)].n.Load()
}
