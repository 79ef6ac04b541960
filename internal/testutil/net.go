package testutil

import (
	"net"
	"testing"
)

// FreeTCPAddr returns a loopback address with a TCP port that was free a
// moment ago.
func FreeTCPAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreeUDPAddr returns a loopback address with a UDP port that was free a
// moment ago.
func FreeUDPAddr(t testing.TB) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}
