package dgram

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// echo answers datagrams that start with its prefix with the datagram
// itself, appended into the writer's buffer.
type echo struct {
	prefix byte
	served atomic.Int64
}

func (e *echo) Match(d []byte) bool { return len(d) > 0 && d[0] == e.prefix }

func (e *echo) ServeDatagram(w *Writer, src netip.AddrPort, d []byte) {
	e.served.Add(1)
	w.WriteTo(append(w.Buffer(len(d)), d...), src)
}

func listen(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startServer(t testing.TB, s *Server, readers int) netip.AddrPort {
	t.Helper()
	s.init() // before the readers: tests look into s.own
	conn := listen(t)
	done := make(chan error, readers)
	for range readers {
		go func() { done <- s.Serve(conn) }()
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		for range readers {
			if err := <-done; !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		}
	})
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

func roundTrip(t *testing.T, c *net.UDPConn, to netip.AddrPort, msg []byte) []byte {
	t.Helper()
	buf := make([]byte, 2*MaxDatagram)
	for range 50 {
		if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err == nil {
			return buf[:n]
		}
	}
	t.Fatalf("no answer to %x", msg[:min(len(msg), 8)])
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestServerDispatch(t *testing.T) {
	for _, batch := range []int{1, 8} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			a, b := &echo{prefix: 'a'}, &echo{prefix: 'b'}
			s := &Server{Protocols: []Protocol{a, b}, Batch: batch, ReadBuffer: 1 << 20}
			addr := startServer(t, s, 2)
			c := listen(t)
			defer c.Close()
			for _, msg := range [][]byte{[]byte("a1"), []byte("b2"), bytes.Repeat([]byte("a"), MaxDatagram)} {
				if got := roundTrip(t, c, addr, msg); !bytes.Equal(got, msg) {
					t.Fatalf("got %d bytes, want the %d sent", len(got), len(msg))
				}
			}
			if a.served.Load() == 0 || b.served.Load() == 0 {
				t.Fatalf("served a=%d b=%d, want both", a.served.Load(), b.served.Load())
			}
			// Unmatched and oversized datagrams are dropped and counted.
			for _, msg := range [][]byte{[]byte("z"), bytes.Repeat([]byte("a"), MaxDatagram+1)} {
				if _, err := c.WriteToUDPAddrPort(msg, addr); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "drops", func() bool {
				return s.Stats.Dropped(DropNoProtocol) >= 1 && s.Stats.Dropped(DropTooLarge) >= 1
			})
		})
	}
}

// TestServerBatchesReplies sends more datagrams than a batch holds and
// expects every one answered once.
func TestServerBatchesReplies(t *testing.T) {
	e := &echo{prefix: 'x'}
	s := &Server{Protocols: []Protocol{e}, Batch: 16, ReadBuffer: 4 << 20}
	addr := startServer(t, s, 1)
	c := listen(t)
	defer c.Close()
	_ = c.SetReadBuffer(4 << 20)
	const n = 200
	for i := range n {
		if _, err := c.WriteToUDPAddrPort(fmt.Appendf(nil, "x%04d", i), addr); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[string]bool)
	buf := make([]byte, 64)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(seen) < n {
		k, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("%d of %d answered: %v", len(seen), n, err)
		}
		seen[string(buf[:k])] = true
	}
}

func TestServeAfterClose(t *testing.T) {
	s := &Server{}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c := listen(t)
	if err := s.Serve(c); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("got %v, want ErrServerClosed", err)
	}
	// The refused socket is closed, not left bound with no reader.
	if _, err := c.WriteTo([]byte("x"), c.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("writing to the refused socket: got %v, want net.ErrClosed", err)
	}
}

func TestWriterAppendsWithoutCopy(t *testing.T) {
	var w Writer
	var counts [numCounts]uint64
	sink := &recordIO{}
	w.init(sink, nil, 4, &counts)
	to := netip.MustParseAddrPort("127.0.0.1:1")
	b := append(w.Buffer(3), "abc"...)
	w.WriteTo(b, to)
	w.WriteTo([]byte("de"), to)                           // copied
	w.WriteTo(bytes.Repeat([]byte("f"), arenaSize-4), to) // does not fit: flushes first
	w.Flush()
	want := []string{"abc", "de", string(bytes.Repeat([]byte("f"), arenaSize-4))}
	if len(sink.got) != len(want) {
		t.Fatalf("got %d datagrams, want %d", len(sink.got), len(want))
	}
	for i := range want {
		if sink.got[i] != want[i] {
			t.Fatalf("datagram %d: got %q…, want %q…", i, sink.got[i][:min(8, len(sink.got[i]))], want[i][:min(8, len(want[i]))])
		}
	}
	if sink.calls != 2 {
		t.Fatalf("got %d writes, want 2 (one per full arena)", sink.calls)
	}
}

type recordIO struct {
	got   []string
	calls int
}

func (r *recordIO) read([]message) (int, error) { return 0, net.ErrClosed }
func (r *recordIO) write(out []message) (int, error) {
	r.calls++
	for _, m := range out {
		r.got = append(r.got, string(m.buf[:m.n]))
	}
	return len(out), nil
}

// TestDispatchAllocatesNothing: the per-datagram path (match, handle,
// queue the reply) allocates nothing once a reader exists.
func TestDispatchAllocatesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux")
	}
	e := &echo{prefix: 'x'}
	s := &Server{Protocols: []Protocol{e}, Batch: 4}
	s.init()
	r := newReader(s.own, listen(t))
	r.io = discardIO{}
	r.w.io = r.io
	m := &r.in[0]
	m.n = copy(m.buf, "x-datagram")
	m.addr = netip.MustParseAddrPort("127.0.0.1:9")
	allocs := testing.AllocsPerRun(1000, func() {
		r.handle(1)
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per datagram, want 0", allocs)
	}
}

type discardIO struct{}

func (discardIO) read([]message) (int, error)      { return 0, net.ErrClosed }
func (discardIO) write(out []message) (int, error) { return len(out), nil }

// Dispatch runs one datagram through the protocols as a reader does: the
// first that matches answers, with the source unmapped.
func TestDispatch(t *testing.T) {
	a, b := &echo{prefix: 'a'}, &echo{prefix: 'a'}
	src := netip.MustParseAddrPort("[::ffff:192.0.2.1]:5000")
	sent, matched := Dispatch([]Protocol{a, b}, src, []byte("abc"))
	if !matched || len(sent) != 1 || string(sent[0].Data) != "abc" || sent[0].To != netip.MustParseAddrPort("192.0.2.1:5000") {
		t.Fatalf("got %v, %+v; want abc echoed to 192.0.2.1:5000", matched, sent)
	}
	if a.served.Load() != 1 || b.served.Load() != 0 {
		t.Fatalf("served: first %d, second %d; want only the first", a.served.Load(), b.served.Load())
	}
	if sent, matched := Dispatch([]Protocol{a}, src, []byte("xyz")); matched || len(sent) != 0 {
		t.Fatalf("no protocol matches: got %v, %+v", matched, sent)
	}
}

// TestReadWriteAllocatesNothing: a reader's whole loop over a real socket
// (read, dispatch, write the reply), one datagram per system call and in
// batches, allocates nothing per datagram. recvmmsg through x/net would
// allocate the source address of each datagram; the reader does not.
func TestReadWriteAllocatesNothing(t *testing.T) {
	for _, batch := range []int{1, 8} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, Batch: batch}
			s.init()
			conn := listen(t)
			defer conn.Close()
			r := newReader(s.own, conn)
			if _, ok := r.io.(singleIO); ok != (batch == 1 || runtime.GOOS != "linux") {
				t.Fatalf("batch %d reads with %T", batch, r.io)
			}
			to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
			c := listen(t)
			defer c.Close()
			msg, buf := []byte("x-datagram"), make([]byte, 64)
			roundTrip := func() {
				if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
					t.Fatal(err)
				}
				n, err := r.io.read(r.in)
				if err != nil || n != 1 {
					t.Fatalf("read %d datagrams: %v", n, err)
				}
				r.handle(n)
				if n, _, err := c.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != string(msg) {
					t.Fatalf("reply %q, %v", buf[:n], err)
				}
			}
			roundTrip()
			if allocs := testing.AllocsPerRun(500, roundTrip); allocs != 0 {
				t.Fatalf("got %v allocations per datagram, want 0", allocs)
			}
		})
	}
}

// source echoes each datagram and records where the last came from.
type source struct {
	echo
	last atomic.Pointer[netip.AddrPort]
}

func (p *source) ServeDatagram(w *Writer, src netip.AddrPort, d []byte) {
	p.last.Store(&src)
	p.echo.ServeDatagram(w, src, d)
}

// TestServerDualStack serves an IPv6 socket that also takes IPv4: IPv4
// sources reach protocols unmapped, and replies reach both kinds.
func TestServerDualStack(t *testing.T) {
	if c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified}); err != nil {
		t.Skip("no IPv6:", err)
	} else {
		c.Close()
	}
	for _, batch := range []int{1, 8} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			p := &source{echo: echo{prefix: 'x'}}
			s := &Server{Protocols: []Protocol{p}, Batch: batch}
			conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Serve(conn) }()
			defer func() { s.Close(); <-done }()
			port := uint16(conn.LocalAddr().(*net.UDPAddr).Port)
			for _, ip := range []string{"127.0.0.1", "::1"} {
				c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(ip), 0)))
				if err != nil {
					t.Logf("no %s: %v", ip, err)
					continue
				}
				msg := []byte("x" + ip)
				if got := roundTrip(t, c, netip.AddrPortFrom(netip.MustParseAddr(ip), port), msg); !bytes.Equal(got, msg) {
					t.Fatalf("%s: got %q, want %q", ip, got, msg)
				}
				if got, want := *p.last.Load(), c.LocalAddr().(*net.UDPAddr).AddrPort(); got != want {
					t.Fatalf("source: got %v, want %v", got, want)
				}
				c.Close()
			}
		})
	}
}
