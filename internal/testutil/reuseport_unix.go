//go:build unix

package testutil

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReusePort opens sockets with SO_REUSEPORT set, as Caddy's listeners and
// the gamegate app's readers have it: for tests that open a socket beside a
// server's own. Give it an address from FreeTCPAddr or FreeUDPAddr, never
// port 0: the kernel may give an SO_REUSEPORT bind of port 0 a port another
// such socket of the same user already holds.
var ReusePort = net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}}
