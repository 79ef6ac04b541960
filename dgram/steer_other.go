//go:build !linux

package dgram

import (
	"errors"
	"net"
)

// steerTo: other systems spread an address's datagrams over its sockets
// as their kernel does.
func steerTo(*net.UDPConn, int32) error { return errors.ErrUnsupported }
