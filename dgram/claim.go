package dgram

import (
	"errors"
	"net"
	"syscall"
)

// ErrAddressInUse reports that a UDP address is held by a socket the
// caller did not open: another process, as a rule.
var ErrAddressInUse = errors.New("the address is in use by another process")

// CheckUnused binds addr without SO_REUSEPORT and closes the socket again.
// Servers share their addresses through SO_REUSEPORT so that a reload can
// open new sockets beside the old ones; the kernel then lets a second
// process bind the same address too, and splits the datagrams between the
// two. A bind without the option fails while any socket holds the address,
// so this tells a port that is free from one that is taken. Callers check
// only addresses their own process does not serve yet.
func CheckUnused(network, addr string) error {
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return ErrAddressInUse
		}
		return err
	}
	return pc.Close()
}
