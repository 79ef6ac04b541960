//go:build linux

package dgram

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// failingIO is a socket's I/O whose first read fails with err, an error of
// the socket itself rather than of one earlier datagram.
type failingIO struct {
	packetIO
	err    error
	failed atomic.Bool
}

func (f *failingIO) read(in []message) (int, error) {
	if !f.failed.Swap(true) {
		return 0, f.err
	}
	return f.packetIO.read(in)
}

// A reader that stops on an error of its socket closes the socket: Serve
// returns the error, the server forgets the socket, the kernel hands its
// share of the port to the port's other sockets, whose readers answer
// every client, and Close closes the rest, each socket once.
func TestServeClosesFailedSocket(t *testing.T) {
	bad := listenReusePort(t, testutil.FreeUDPAddr(t))
	good := listenReusePort(t, bad.LocalAddr().String())
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}}
	s.newIO = func(conn *net.UDPConn, batch int) packetIO {
		if conn == bad {
			return &failingIO{packetIO: newPacketIO(conn, batch), err: syscall.EBADF}
		}
		return newPacketIO(conn, batch)
	}
	goodDone := make(chan error, 1)
	go func() { goodDone <- s.Serve(good) }()

	if err := s.Serve(bad); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Serve of the failing socket returned %v, want EBADF", err)
	}
	if _, err := bad.WriteTo([]byte("x"), bad.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("writing to the failed socket: got %v, want net.ErrClosed (left bound with no reader)", err)
	}
	s.own.mu.Lock()
	_, held := s.own.conns[bad]
	s.own.mu.Unlock()
	if held {
		t.Fatal("the server still holds the failed socket")
	}
	// The kernel spreads clients over the port's sockets by their address:
	// a failed socket left bound would take some clients' datagrams and
	// never answer them.
	to := good.LocalAddr().(*net.UDPAddr).AddrPort()
	for i := range 16 {
		c := listen(t)
		if got := roundTrip(t, c, to, []byte{'x', byte(i)}); len(got) != 2 || got[1] != byte(i) {
			t.Fatalf("client %d: got %q", i, got)
		}
		c.Close()
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v, want nil (each socket closed once)", err)
	}
	if err := <-goodDone; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve of the other socket returned %v, want ErrServerClosed", err)
	}
}

// A read that waited for its socket reads the one datagram that woke it,
// the latency case; the next read takes one too (mostly it finds none, and
// one datagram is cheaper to look for), and, having found one, the read
// after it takes whatever else arrived meanwhile in one batch, without
// waiting; and for a while after, the read after a woken one takes a
// batch at once.
func TestReadAfterWaitTakesOne(t *testing.T) {
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, Batch: 8}
	s.init()
	conn := listen(t)
	defer conn.Close()
	r := newReader(s.own, conn)
	b := r.io.(*mmsgIO)
	to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	c := listen(t)
	defer c.Close()
	read := func() int {
		t.Helper()
		n, err := r.io.read(r.in)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// burst starts a read, sends 5 datagrams while it (mostly) waits, and
	// returns what the read took and whether it waited; then n more reads
	// while datagrams are left, and what each took (0: none was left).
	burst := func(n int) (first int, waited bool, next []int) {
		done := make(chan int, 1)
		go func() {
			n, err := r.io.read(r.in)
			if err != nil {
				t.Error(err)
			}
			done <- n
		}()
		runtime.Gosched()
		for i := range 5 {
			if _, err := c.WriteToUDPAddrPort([]byte{'x', byte(i)}, to); err != nil {
				t.Fatal(err)
			}
		}
		first, waited = <-done, b.waited
		got := first
		for range n {
			k := 0
			if got < 5 { // a read with nothing left to take would wait
				k = read()
			}
			next = append(next, k)
			got += k
		}
		for got < 5 {
			got += read()
		}
		return first, waited, next
	}
	for range 50 {
		first, waited, next := burst(2)
		if !waited {
			continue // the datagrams arrived before the read: it took them in a batch
		}
		if first != 1 || next[0] != 1 || next[1] != 3 {
			t.Fatalf("a read that waited, the next and the one after took %d, %d and %d datagrams, want 1, 1 and the 3 others", first, next[0], next[1])
		}
		if r.in[2].n != 2 || r.in[2].buf[1] != 4 {
			t.Fatalf("the last datagram read is %q, want the fifth", r.in[2].buf[:r.in[2].n])
		}
		// The probe found a datagram: datagrams arrive together, and after
		// the next wakes the read after the woken one takes a batch.
		for range 50 {
			if first, waited, next := burst(1); waited && first == 1 {
				if next[0] != 4 {
					t.Fatalf("after a probe found a datagram, the read after a woken one took %d, want the 4 others at once", next[0])
				}
				return
			}
		}
		t.Fatal("no read waited for its socket in 50 tries after the probe")
	}
	t.Fatal("no read waited for its socket in 50 tries")
}

// A lone reply goes out with sendto, a batch with sendmmsg; either way a
// reply the kernel refuses (an IPv6 destination on an IPv4 socket) is
// counted as a failed write, and the replies beside it still go.
func TestRefusedReplyCountedAloneAndInBatch(t *testing.T) {
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, Batch: 8}
	s.init()
	conn := listen(t)
	defer conn.Close()
	r := newReader(s.own, conn)
	if _, ok := r.io.(*mmsgIO); !ok {
		t.Fatalf("batch 8 writes with %T", r.io)
	}
	c := listen(t)
	defer c.Close()
	to := c.LocalAddr().(*net.UDPAddr).AddrPort()
	v6 := netip.MustParseAddrPort("[::1]:9")
	buf := make([]byte, 64)

	r.w.WriteTo([]byte("alone"), to)
	r.w.Flush()
	if n, _, err := c.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != "alone" {
		t.Fatalf("lone reply: %q, %v", buf[:n], err)
	}
	r.w.WriteTo([]byte("refused"), v6)
	r.w.Flush()
	if got := r.counts[countDropWriteFailed]; got != 1 {
		t.Fatalf("a lone refused reply: %d failed writes counted, want 1", got)
	}
	r.w.WriteTo([]byte("first"), to)
	r.w.WriteTo([]byte("refused"), v6)
	r.w.WriteTo([]byte("last"), to)
	r.w.Flush()
	if got := r.counts[countDropWriteFailed]; got != 2 {
		t.Fatalf("a refused reply in a batch: %d failed writes counted in all, want 2", got)
	}
	for _, want := range []string{"first", "last"} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, _, err := c.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != want {
			t.Fatalf("batch reply: %q, %v; want %q", buf[:n], err, want)
		}
	}
	// Replies to one address that would go as one group: each refused
	// one is counted, and the group beside them still goes.
	for _, m := range []struct {
		b  string
		to netip.AddrPort
	}{{"refused", v6}, {"group", to}, {"refused", v6}, {"group", to}, {"refused", v6}} {
		r.w.WriteTo([]byte(m.b), m.to)
	}
	r.w.Flush()
	if got := r.counts[countDropWriteFailed]; got != 5 {
		t.Fatalf("refused replies in groups: %d failed writes counted in all, want 5", got)
	}
	for range 2 {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, _, err := c.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != "group" {
			t.Fatalf("grouped reply: %q, %v; want %q", buf[:n], err, "group")
		}
	}
}

// An error of a write names the system call that failed: sendto for a lone
// datagram, sendmmsg for a batch.
func TestWriteErrorNamesItsCall(t *testing.T) {
	conn := listen(t)
	defer conn.Close()
	io, err := newBatchIO(conn, 8)
	if err != nil {
		t.Fatal(err)
	}
	v6 := message{buf: []byte("x"), n: 1, addr: netip.MustParseAddrPort("[::1]:9")}
	for _, c := range []struct {
		out  []message
		call string
	}{{[]message{v6}, "sendto"}, {[]message{v6, v6}, "sendmmsg"}} {
		if _, err := io.write(c.out); err == nil || !strings.HasPrefix(err.Error(), c.call+":") {
			t.Errorf("writing %d datagrams the kernel refuses: %v, want an error of %s", len(c.out), err, c.call)
		}
	}
}

// Datagrams to one address go out as one group where the kernel can send
// them so (UDP_SEGMENT), and arrive each as sent, in the order sent to
// their address; a shorter datagram ends its group, and a longer one
// starts the next. Writing a batch so allocates nothing. An IPv6 socket
// groups datagrams to IPv4 peers (mapped addresses) as to IPv6 ones.
func TestWriteGroupsDatagramsToOneAddress(t *testing.T) {
	peer := func(t *testing.T, ip string) *net.UDPConn {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
		if err != nil {
			t.Skipf("no %s: %v", ip, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("ipv4", func(t *testing.T) {
		conn := listen(t)
		defer conn.Close()
		testWriteGroups(t, conn, peer(t, "127.0.0.1"), peer(t, "127.0.0.1"))
	})
	t.Run("dual-stack", func(t *testing.T) {
		conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified})
		if err != nil {
			t.Skip("no IPv6:", err)
		}
		defer conn.Close()
		testWriteGroups(t, conn, peer(t, "127.0.0.1"), peer(t, "::1"))
	})
}

func testWriteGroups(t *testing.T, conn, ca, cb *net.UDPConn) {
	pio, err := newBatchIO(conn, 16)
	if err != nil {
		t.Fatal(err)
	}
	b := pio.(*mmsgIO)
	a, bb := ca.LocalAddr().(*net.UDPAddr).AddrPort(), cb.LocalAddr().(*net.UDPAddr).AddrPort()
	if b.v6 {
		a = netip.AddrPortFrom(netip.AddrFrom16(a.Addr().As16()), a.Port()) // as a dual-stack reader sees it
	}
	sends := []struct {
		to   netip.AddrPort
		data string
	}{{a, "a1--"}, {bb, "b1"}, {a, "a2--"}, {a, "a3"}, {a, "a4--"}, {bb, "b2---"}, {a, "a5--"}, {bb, "b3"}}
	out, data := make([]message, len(sends)), make([][]byte, len(sends))
	for i, s := range sends {
		data[i] = []byte(s.data)
	}
	batch := func() {
		for i, s := range sends {
			out[i] = message{buf: data[i], n: len(data[i]), addr: s.to}
		}
		for sent := 0; sent < len(out); {
			n, err := b.write(out[sent:])
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			sent += n
		}
	}
	buf := make([]byte, 64)
	expect := func(c *net.UDPConn, want ...string) {
		for _, w := range want {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil || string(buf[:n]) != w {
				t.Fatalf("received %q, %v; want %q", buf[:n], err, w)
			}
		}
	}
	batch()
	expect(ca, "a1--", "a2--", "a3", "a4--", "a5--")
	expect(cb, "b1", "b2---", "b3")
	if b.gso {
		// a1 a2 a3 | b1 | a4 a5 | b2 b3
		if len(b.hs) != 4 {
			t.Fatalf("8 datagrams to 2 addresses went out in %d groups, want 4", len(b.hs))
		}
	} else {
		t.Log("the kernel sends no groups (UDP_SEGMENT): each datagram went alone")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		batch()
		expect(ca, "a1--", "a2--", "a3", "a4--", "a5--")
		expect(cb, "b1", "b2---", "b3")
	}); allocs != 0 {
		t.Fatalf("got %v allocations per batch, want 0", allocs)
	}
}

// The batched calls never block in the kernel, even on a socket in
// blocking mode (os.File.Fd puts a socket's file in blocking mode, and a
// dup shares it): they are raw system calls, which hold their thread and
// processor, past a deadline and through the garbage collector's stops,
// so each asks for MSG_DONTWAIT itself and the poller does the waiting.
func TestBatchIONeverBlocksInTheKernel(t *testing.T) {
	defer runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))) // a blocked call holds one
	conn := listen(t)
	defer conn.Close()
	pio, err := newBatchIO(conn, 8)
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Fd() // the socket's file is now in blocking mode
	in := make([]message, 8)
	for i := range in {
		in[i].buf = make([]byte, 64)
	}
	for _, probe := range []bool{false, true} { // recvmmsg, then recvfrom (see read)
		pio.(*mmsgIO).probe = probe
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		done := make(chan error, 1)
		go func() { _, err := pio.read(in); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read on an empty socket (probe %v): %v, want its deadline's error", probe, err)
			}
		case <-time.After(5 * time.Second):
			c := listen(t) // release the read blocked in the kernel
			defer c.Close()
			_, _ = c.WriteToUDPAddrPort([]byte("x"), conn.LocalAddr().(*net.UDPAddr).AddrPort())
			<-done
			t.Fatalf("a read on an empty socket in blocking mode (probe %v) blocked in the kernel past its deadline", probe)
		}
	}
}
