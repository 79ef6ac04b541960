package dgram

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// countingIO counts the datagrams its socket's reader reads.
type countingIO struct {
	packetIO
	n *atomic.Int64
}

func (c countingIO) read(in []message) (int, error) {
	n, err := c.packetIO.read(in)
	c.n.Add(int64(n))
	return n, err
}

// steered serves s on two SO_REUSEPORT sockets of one address, as the
// gamegate app does, and returns the address and each socket's count of
// datagrams read.
func steered(t *testing.T, s *Server) (netip.AddrPort, *net.UDPConn, [2]*atomic.Int64) {
	t.Helper()
	addr := testutil.FreeUDPAddr(t)
	conns, counts := serveCounted(t, s, addr)
	waitFor(t, "the readers", func() bool {
		s.own.mu.Lock()
		defer s.own.mu.Unlock()
		st := s.own.steerers[conns[0].LocalAddr().Network()+"/"+addr]
		return st != nil && st.readers == len(conns)
	})
	return conns[0].LocalAddr().(*net.UDPAddr).AddrPort(), conns[0], counts
}

// fromSources makes one round trip from each of n new client sockets.
func fromSources(t *testing.T, to netip.AddrPort, n int) {
	t.Helper()
	for i := range n {
		c := listen(t)
		if got := roundTrip(t, c, to, []byte{'x', byte(i)}); len(got) != 2 || got[1] != byte(i) {
			t.Fatalf("source %d: got %q", i, got)
		}
		c.Close()
	}
}

// mode is the steering mode of addr's sockets.
func (s *Server) steerMode(conn *net.UDPConn) int32 {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	return s.own.steerers[conn.LocalAddr().Network()+"/"+conn.LocalAddr().String()].mode.Load()
}

// Under light load one socket takes all of an address's datagrams, from
// every source: the kernel alone would spread 16 sources over both.
func TestSteerOneSocketUnderLightLoad(t *testing.T) {
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}}
	to, _, counts := steered(t, s)
	fromSources(t, to, 16)
	a, b := counts[0].Load(), counts[1].Load()
	if a+b < 16 || (a != 0 && b != 0) {
		t.Fatalf("datagrams read per socket: %d and %d, want all %d on one", a, b, a+b)
	}
}

// gate is an echo whose first datagram waits for open to close: the reader
// it holds leaves a backlog in its socket.
type gate struct {
	echo
	held atomic.Bool
	in   chan struct{}
	open chan struct{}
}

func (g *gate) ServeDatagram(w *Writer, src netip.AddrPort, d []byte) {
	if !g.held.Swap(true) {
		close(g.in)
		<-g.open
	}
	g.echo.ServeDatagram(w, src, d)
}

// A backlog of full batches on the one socket spreads the datagrams over
// all the address's sockets, and both readers answer.
func TestSteerSpreadsUnderLoad(t *testing.T) {
	g := &gate{echo: echo{prefix: 'x'}, in: make(chan struct{}), open: make(chan struct{})}
	s := &Server{Protocols: []Protocol{g}, ReadBuffer: 1 << 20, steerWindow: time.Hour}
	to, conn, counts := steered(t, s)
	c := listen(t)
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort([]byte("x"), to); err != nil {
		t.Fatal(err)
	}
	<-g.in
	const backlog = 8 * 32
	for i := range backlog {
		if _, err := c.WriteToUDPAddrPort([]byte{'x', byte(i)}, to); err != nil {
			t.Fatal(err)
		}
	}
	close(g.open)
	waitFor(t, "the backlog read", func() bool { return counts[0].Load()+counts[1].Load() >= backlog+1 })
	if got := s.steerMode(conn); got != steerSpread {
		t.Fatalf("after a backlog of %d datagrams the mode is %d, want spread (%d)", backlog, got, steerSpread)
	}
	before := [2]int64{counts[0].Load(), counts[1].Load()}
	fromSources(t, to, 32)
	if counts[0].Load() == before[0] || counts[1].Load() == before[1] {
		t.Fatalf("32 sources read per socket: %d and %d, want some on each", counts[0].Load()-before[0], counts[1].Load()-before[1])
	}
}

// Once the load is light for a window, one socket takes every datagram
// again.
func TestSteerReturnsToOneSocket(t *testing.T) {
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, steerWindow: 20 * time.Millisecond}
	to, conn, counts := steered(t, s)
	s.own.mu.Lock()
	st := s.own.steerers[conn.LocalAddr().Network()+"/"+conn.LocalAddr().String()]
	s.own.mu.Unlock()
	st.switchTo(conn, steerSpread)
	c := listen(t)
	defer c.Close()
	waitFor(t, "one socket again", func() bool {
		roundTrip(t, c, to, []byte("x"))
		return s.steerMode(conn) == steerOne
	})
	before := [2]int64{counts[0].Load(), counts[1].Load()}
	fromSources(t, to, 16)
	if a, b := counts[0].Load()-before[0], counts[1].Load()-before[1]; a != 0 && b != 0 {
		t.Fatalf("datagrams read per socket: %d and %d, want all on one", a, b)
	}
}

// A socket without SO_REUSEPORT cannot be steered: its readers serve as
// they would without steering.
func TestSteerOffWithoutReusePort(t *testing.T) {
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}}
	to := startServer(t, s, 2)
	fromSources(t, to, 4)
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	for addr, st := range s.own.steerers {
		if !st.off.Load() {
			t.Fatalf("%s: steering on for a socket without SO_REUSEPORT", addr)
		}
	}
}

// After a reload from a server that steers to one that does not (a batch
// too small to tell a backlog), the kernel spreads the datagrams by
// source again once the old server is closed: its program does not stay
// attached to the group, sending every datagram to one socket.
func TestSteerDetachedAfterReloadToNoSteering(t *testing.T) {
	old := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, Batch: 32}
	to, conn, _ := steered(t, old)
	if st := old.steerMode(conn); st != steerOne {
		t.Fatalf("old server's mode %d, want one socket", st)
	}
	fromSources(t, to, 4) // the old readers apply their mode

	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, Batch: 4}
	conns, counts := serveCounted(t, s, to.String())
	waitFor(t, "the new readers", func() bool {
		s.own.mu.Lock()
		defer s.own.mu.Unlock()
		return len(s.own.conns) == len(conns)
	})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	fromSources(t, to, 64)
	if a, b := counts[0].Load(), counts[1].Load(); a+b < 64 || a == 0 || b == 0 {
		t.Fatalf("64 sources read per socket: %d and %d, want some on each", a, b)
	}
}

// serveCounted serves s on two new SO_REUSEPORT sockets of addr, until the
// test ends, and returns them with each one's count of datagrams read.
func serveCounted(t *testing.T, s *Server, addr string) ([2]*net.UDPConn, [2]*atomic.Int64) {
	t.Helper()
	var conns [2]*net.UDPConn
	var counts [2]*atomic.Int64
	for i := range conns {
		conns[i] = listenReusePort(t, addr)
		counts[i] = new(atomic.Int64)
	}
	s.newIO = func(conn *net.UDPConn, batch int) packetIO {
		for i := range conns {
			if conn == conns[i] {
				return countingIO{newPacketIO(conn, batch), counts[i]}
			}
		}
		t.Error("an unknown socket")
		return newPacketIO(conn, batch)
	}
	s.init() // before the readers: callers' waits read s.own.conns
	done := make(chan error, len(conns))
	for _, c := range conns {
		go func() { done <- s.Serve(c) }()
	}
	t.Cleanup(func() {
		s.Close()
		for range conns {
			<-done
		}
	})
	return conns, counts
}
