package dgram

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// toFirstSocket is a classic BPF program for an SO_REUSEPORT group that
// picks the group's first socket for every datagram.
var toFirstSocket = []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}

// steerTo sets the mode of conn's SO_REUSEPORT group: steerOne attaches
// toFirstSocket, steerSpread detaches it (the kernel's hash by source).
func steerTo(conn *net.UDPConn, mode int32) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if mode == steerOne {
			prog := unix.SockFprog{Len: uint16(len(toFirstSocket)), Filter: &toFirstSocket[0]}
			serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &prog)
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DETACH_REUSEPORT_BPF, 0)
		if errors.Is(serr, unix.ENOENT) {
			serr = nil // none attached
		}
	})
	if err != nil {
		return err
	}
	return serr
}
