package caddyglue

import (
	"net"
	"sync"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
)

// DatagramMatcher is the one body of the layer4 matchers that recognise a
// UDP association by its first datagram, with the cheap peek of the
// protocol's wire package, so a datagram protocol can share a port with
// others. A matcher module is its name, how much of the datagram its peek
// reads, and the peek.
type DatagramMatcher struct {
	// name is the matcher's Caddyfile name, for its errors.
	name string
	// readLen is how many bytes of the first datagram are read: one more
	// than the longest datagram the protocol accepts, so an oversized one
	// shows (or just the header, where the peek reads no more).
	readLen int
	// looksLike is the wire package's peek.
	looksLike func(datagram []byte) bool
}

// NewDatagramMatcher returns the matcher body of a protocol: its Caddyfile
// name, how much of the first datagram its peek reads, and the peek.
func NewDatagramMatcher(name string, readLen int, looksLike func(datagram []byte) bool) DatagramMatcher {
	return DatagramMatcher{name: name, readLen: readLen, looksLike: looksLike}
}

// matchBuffer is room for the first datagram as far as any matcher reads
// it; matchBuffers keeps them, so matching allocates nothing.
type matchBuffer [maxDatagram]byte

var matchBuffers = sync.Pool{New: func() any { return new(matchBuffer) }}

// Match reads the first datagram once. A datagram too long for caddy-l4's
// matching chunk reads as zero bytes (no frame boundary yet) and does not
// match; nothing here loops on reads. A stream never matches.
func (m *DatagramMatcher) Match(cx *layer4.Connection) (bool, error) {
	if _, ok := cx.Conn.(net.PacketConn); !ok {
		return false, nil
	}
	buf := matchBuffers.Get().(*matchBuffer)
	defer matchBuffers.Put(buf)
	n, err := cx.Read(buf[:m.readLen])
	if err != nil {
		return false, err // including ErrConsumedAllPrefetchedBytes: caddy-l4 then reads the datagram
	}
	return m.looksLike(buf[:n]), nil
}

// UnmarshalCaddyfile parses the matcher, which takes no options.
func (m *DatagramMatcher) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return ParseNoOptions(d, m.name+" matcher")
}
