package dgram

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// hiddenPacketConn is a packet socket that is not a *net.UDPConn and does
// not unwrap to one, as caddy-l4's association sockets are.
type hiddenPacketConn struct {
	net.PacketConn
	writes int
}

func (h *hiddenPacketConn) WriteTo(b []byte, to net.Addr) (int, error) {
	h.writes++
	return h.PacketConn.WriteTo(b, to)
}

// A Writer from NewWriter over NewConn of any packet socket sends what a
// protocol wrote when flushed, one datagram per write: small replies,
// replies appended to Buffer and replies longer than its room alike.
func TestNewWriterOverAnyPacketConn(t *testing.T) {
	server, client := listen(t), listen(t)
	defer server.Close()
	defer client.Close()
	pc := &hiddenPacketConn{PacketConn: server}
	conn := NewConn(pc)
	if conn.udp != nil {
		t.Fatal("NewConn found a *net.UDPConn inside a socket that hides it")
	}
	w := NewWriter(conn)
	if w.Conn() != conn {
		t.Fatal("the Writer's Conn is not the one it writes through")
	}
	to := client.LocalAddr().(*net.UDPAddr).AddrPort()
	big := bytes.Repeat([]byte("z"), MaxDatagram+1) // past its room: sent at once
	w.WriteTo([]byte("one"), to)
	w.WriteTo(append(w.Buffer(3), "two"...), to)
	w.WriteTo(big[:2000], to)
	w.Flush()
	want := []string{"one", "two", string(big[:2000])}
	buf := make([]byte, 2*MaxDatagram)
	for i, want := range want {
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := client.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if string(buf[:n]) != want || from != server.LocalAddr().(*net.UDPAddr).AddrPort() {
			t.Fatalf("datagram %d: got %d bytes from %v, want %d bytes from the server", i, n, from, len(want))
		}
	}
	if pc.writes != 3 {
		t.Fatalf("got %d writes through the socket, want 3", pc.writes)
	}
	if err := (&Conn{}).WriteTo([]byte("x"), to); err != net.ErrClosed {
		t.Fatalf("a Conn without a socket: got %v, want net.ErrClosed", err)
	}
}

// NewConn of a *net.UDPConn writes to it directly, without allocating.
func TestNewConnOfUDPConn(t *testing.T) {
	c, sink := listen(t), listen(t)
	defer c.Close()
	defer sink.Close()
	conn := NewConn(c)
	if conn.udp != c {
		t.Fatal("NewConn of a *net.UDPConn does not write to it directly")
	}
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	msg := []byte("x")
	if allocs := testing.AllocsPerRun(100, func() { _ = conn.WriteTo(msg, to) }); allocs != 0 {
		t.Fatalf("got %v allocations per write, want 0", allocs)
	}
}

// scoped keeps one protocol per listener name.
type scoped map[string]*echo

func (s scoped) ForListener(listener string) (Protocol, error) {
	if s[listener] == nil {
		s[listener] = &echo{prefix: 'x'}
	}
	return s[listener], nil
}

func TestProtocolAt(t *testing.T) {
	e := &echo{prefix: 'x'}
	if p, err := ProtocolAt(e, "a"); err != nil || p != Protocol(e) {
		t.Fatalf("a plain protocol: got %v, %v; want itself", p, err)
	}
	s := scoped{}
	a, _ := ProtocolAt(s, "127.0.0.1:1")
	b, _ := ProtocolAt(s, "127.0.0.1:2")
	again, _ := ProtocolAt(s, "127.0.0.1:1")
	if a == b || a != again {
		t.Fatal("a ListenerScoped protocol: want one protocol per listener name")
	}
	if _, err := ProtocolAt("qos", "x"); err == nil {
		t.Fatal("a value that is no protocol: got no error")
	}
}
