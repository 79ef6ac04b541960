package caddyglue

import (
	"errors"
	"io"
	"net"

	"github.com/mholt/caddy-l4/layer4"
)

// maxDatagram is the largest datagram caddy-l4 delivers (its read buffers
// are 9000 bytes). Reading into a buffer this size keeps one datagram per
// Read, so an oversized datagram is seen whole and dropped, never split into
// pieces that could each look like a message.
const maxDatagram = 9000

// readDatagrams calls handle with each datagram of a UDP association, read
// into buf (maxDatagram bytes), in order, until the association ends
// (caddy-l4's idle timeout: nil) or the read fails. The datagram is valid
// only during the call.
//
// A read of zero bytes means part of a datagram longer than caddy-l4's 2 KiB
// matching chunk is stuck in the matching buffer without a frame boundary:
// no read can make progress, so the association ends there (onStuck is
// called) and the client's next datagram starts a fresh one.
func readDatagrams(cx *layer4.Connection, buf []byte, onStuck func(), handle func(datagram []byte)) error {
	for {
		n, err := cx.Read(buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if n == 0 {
			onStuck()
			return nil
		}
		handle(buf[:n])
	}
}
