package testutil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// UDPClient is a loopback UDP socket talking to one server address.
type UDPClient struct {
	Conn   *net.UDPConn
	server *net.UDPAddr
	t      testing.TB
}

// DialUDP opens a socket on local (e.g. "127.0.0.1:0") towards server.
func DialUDP(t testing.TB, local, server string) *UDPClient {
	t.Helper()
	la, err := net.ResolveUDPAddr("udp", local)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", la)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &UDPClient{Conn: c, server: ra, t: t}
}

// Send sends one datagram to the server.
func (c *UDPClient) Send(b []byte) {
	c.t.Helper()
	if _, err := c.Conn.WriteToUDP(b, c.server); err != nil {
		c.t.Fatal(err)
	}
}

// Recv waits up to timeout for a datagram from the server; ok is false on
// timeout. Datagrams from other addresses are ignored.
func (c *UDPClient) Recv(timeout time.Duration) (b []byte, ok bool) {
	c.t.Helper()
	buf := make([]byte, 65536)
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Conn.SetReadDeadline(deadline); err != nil {
			c.t.Fatal(err)
		}
		n, from, err := c.Conn.ReadFromUDP(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, false
		}
		if err != nil {
			c.t.Fatal(err)
		}
		if from.Port == c.server.Port && from.IP.Equal(c.server.IP) {
			return buf[:n:n], true
		}
	}
}

// ServeUDP answers every datagram arriving on a fresh loopback socket with
// the datagrams answer returns, until the test ends, and returns the socket's
// address. answer runs on one goroutine, in arrival order, and owns req.
func ServeUDP(t testing.TB, answer func(from netip.AddrPort, req []byte) [][]byte) netip.AddrPort {
	t.Helper()
	return ServeUDPAt(t, "127.0.0.1:0", answer)
}

// ServeUDPAt is ServeUDP on address: a fixture that answers on the same
// port over TCP too listens on a port of FreeTCPAddr's, free for both.
func ServeUDPAt(t testing.TB, address string, answer func(from netip.AddrPort, req []byte) [][]byte) netip.AddrPort {
	t.Helper()
	laddr, err := net.ResolveUDPAddr("udp", address)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			for _, d := range answer(from, append([]byte(nil), buf[:n]...)) {
				_, _ = conn.WriteToUDPAddrPort(d, from)
			}
		}
	}()
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// UDPSocketsConnectedTo counts the IPv4 UDP sockets on this machine
// connected to addr (their remote address in /proc/net/udp), such as the
// sockets of queries still waiting for an upstream at addr. It fails the
// test where /proc/net/udp cannot be read or addr is not IPv4.
func UDPSocketsConnectedTo(t testing.TB, addr netip.AddrPort) int {
	t.Helper()
	if !addr.Addr().Unmap().Is4() {
		t.Fatalf("UDPSocketsConnectedTo(%v): IPv4 addresses only", addr)
	}
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		t.Fatal(err)
	}
	ip := addr.Addr().Unmap().As4()
	// /proc/net writes an IPv4 address as the hex of its 32 bits in host
	// (little-endian) order.
	want := fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ip[:]), addr.Port())
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address ...
		if f := strings.Fields(line); len(f) > 2 && f[2] == want {
			n++
		}
	}
	return n
}
