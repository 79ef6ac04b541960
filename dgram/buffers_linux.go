package dgram

import (
	"net"

	"golang.org/x/sys/unix"
)

// setBuffer asks for a socket buffer of want bytes and returns what the
// kernel granted. Past net.core.rmem_max (wmem_max) the kernel caps the
// size silently; SO_RCVBUFFORCE (SO_SNDBUFFORCE) passes the cap when the
// process has CAP_NET_ADMIN.
func setBuffer(conn *net.UDPConn, want int, read bool) (int, error) {
	opt, force := unix.SO_SNDBUF, unix.SO_SNDBUFFORCE
	if read {
		opt, force = unix.SO_RCVBUF, unix.SO_RCVBUFFORCE
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var got int
	var serr error
	err = rc.Control(func(fd uintptr) {
		granted := func() int {
			v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt)
			if err != nil {
				serr = err
				return 0
			}
			return v / 2 // Linux reports twice the size asked for (its bookkeeping)
		}
		if got = granted(); got >= want {
			return
		}
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, want); serr != nil {
			return
		}
		if got = granted(); got >= want {
			return
		}
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, force, want) // fails without CAP_NET_ADMIN
		got = granted()
	})
	if err != nil {
		return 0, err
	}
	return got, serr
}
