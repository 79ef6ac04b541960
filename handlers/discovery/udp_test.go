package discovery

import (
	"net"
	"net/netip"
	"testing"
)

func listenUDP(t *testing.T) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func addrPort(c net.PacketConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// deadUDPAddr returns a loopback UDP address nobody answers on.
func deadUDPAddr(t *testing.T) netip.AddrPort {
	c := listenUDP(t) // bound but never read: requests are not answered
	return addrPort(c)
}
