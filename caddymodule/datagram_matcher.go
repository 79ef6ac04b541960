package caddymodule

import (
	"net"
	"sync"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
)

// datagramMatcher is the one body of the layer4 matchers that recognise a
// UDP association by its first datagram, with the cheap peek of the
// protocol's wire package, so a datagram protocol can share a port with
// others. A matcher module is its name, how much of the datagram its peek
// reads, and the peek.
type datagramMatcher struct {
	// name is the matcher's Caddyfile name, for its errors.
	name string
	// readLen is how many bytes of the first datagram are read: one more
	// than the longest datagram the protocol accepts, so an oversized one
	// shows (or just the header, where the peek reads no more).
	readLen int
	// looksLike is the wire package's peek.
	looksLike func(datagram []byte) bool
}

// matchBuffer is room for the first datagram as far as any matcher reads
// it; matchBuffers keeps them, so matching allocates nothing.
type matchBuffer [maxDatagram]byte

var matchBuffers = sync.Pool{New: func() any { return new(matchBuffer) }}

// match reads the first datagram once. A datagram too long for caddy-l4's
// matching chunk reads as zero bytes (no frame boundary yet) and does not
// match; nothing here loops on reads. A stream never matches.
func (m *datagramMatcher) match(cx *layer4.Connection) (bool, error) {
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

// unmarshalCaddyfile parses the matcher, which takes no options.
func (m *datagramMatcher) unmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseNoOptions(d, m.name+" matcher")
}
