//go:build !linux

package dgram

import (
	"errors"
	"net"
)

// newBatchIO: other systems read and write one datagram per system call.
func newBatchIO(*net.UDPConn, int) (packetIO, error) {
	return nil, errors.ErrUnsupported
}
