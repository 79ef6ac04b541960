//go:build linux

package dgram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// BenchmarkEcho measures echoed datagrams (one op is one round trip) from
// a closed loop of client sockets, each keeping a window of datagrams in
// flight, through:
//
//   - bare: the baseline, a plain Go loop on one socket (one reader,
//     ReadFromUDPAddrPort, WriteToUDPAddrPort);
//   - readers=1/batch=1: the server with one reader, one datagram per
//     system call;
//   - readers=1/batch=32: one reader, recvmmsg/sendmmsg;
//   - readers=2/batch=32: two readers on SO_REUSEPORT sockets (as the
//     gamegate app opens them), recvmmsg/sendmmsg;
//   - readers=2-shared/batch=32: two readers sharing one socket (they take
//     turns reading it), recvmmsg/sendmmsg.
//
// The clients run in the same process, on the same CPUs. Run the variants
// interleaved and compare each with the bare loop of the same round:
//
//	go test -run '^$' -bench Echo -benchtime 2s -count 5 ./dgram
func BenchmarkEcho(b *testing.B) { benchEcho(b, loadWindow) }

// BenchmarkEchoOneInFlight is BenchmarkEcho with one datagram in flight per
// client: the latency-bound case, where a reader mostly finds one datagram
// waiting and the cost of each wakeup and system call shows.
func BenchmarkEchoOneInFlight(b *testing.B) { benchEcho(b, 1) }

func benchEcho(b *testing.B, window int) {
	b.Run("bare", func(b *testing.B) {
		conn := listen(b)
		go bareEcho(conn)
		b.Cleanup(func() { conn.Close() })
		runEchoLoad(b, conn.LocalAddr().(*net.UDPAddr).AddrPort(), window)
	})
	for _, v := range []struct {
		readers, batch int
		shared         bool
	}{{1, 1, false}, {1, 32, false}, {2, 32, false}, {2, 32, true}} {
		sockets := ""
		if v.shared {
			sockets = "-shared"
		}
		b.Run(fmt.Sprintf("readers=%d%s/batch=%d", v.readers, sockets, v.batch), func(b *testing.B) {
			s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}, Batch: v.batch, ReadBuffer: 4 << 20, WriteBuffer: 4 << 20}
			var addr netip.AddrPort
			if v.shared {
				addr = startServer(b, s, v.readers)
			} else {
				addr = startReusePortServer(b, s, v.readers)
			}
			runEchoLoad(b, addr, window)
		})
	}
}

// bareEcho is the baseline: the plainest Go UDP echo loop.
func bareEcho(conn *net.UDPConn) {
	buf := make([]byte, MaxDatagram+1)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		_, _ = conn.WriteToUDPAddrPort(buf[:n], from)
	}
}

// listenReusePort opens an SO_REUSEPORT UDP socket on addr, a loopback
// address.
func listenReusePort(t testing.TB, addr string) *net.UDPConn {
	t.Helper()
	pc, err := testutil.ReusePort.ListenPacket(context.Background(), "udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	return pc.(*net.UDPConn)
}

// startReusePortServer serves s with readers readers, each on its own
// SO_REUSEPORT socket of one loopback address.
func startReusePortServer(t testing.TB, s *Server, readers int) netip.AddrPort {
	t.Helper()
	addr := "127.0.0.1:0"
	done := make(chan error, readers)
	for range readers {
		pc := listenReusePort(t, addr)
		addr = pc.LocalAddr().String()
		go func() { done <- s.Serve(pc) }()
	}
	t.Cleanup(func() {
		_ = s.Close()
		for range readers {
			<-done
		}
	})
	return netip.MustParseAddrPort(addr)
}

const (
	loadClients = 4  // client sockets
	loadWindow  = 16 // datagrams in flight per client
	loadSize    = 64 // bytes per datagram
)

// runEchoLoad runs b.N round trips to addr from loadClients sockets, each
// with window datagrams in flight. A datagram lost (the kernel drops when a
// buffer is full) is replaced after 500 ms without answers.
func runEchoLoad(b *testing.B, addr netip.AddrPort, window int) {
	conns := make([]*net.UDPConn, loadClients)
	for i := range conns {
		conns[i] = listen(b)
		_ = conns[i].SetReadBuffer(1 << 20)
		defer conns[i].Close()
	}
	// Warm up: every client is answered once.
	msg := make([]byte, loadSize)
	msg[0] = 'x'
	buf := make([]byte, 2*loadSize)
	for _, c := range conns {
		for i := 0; ; i++ {
			if i == 50 {
				b.Fatal("no answer")
			}
			_, _ = c.WriteToUDPAddrPort(msg, addr)
			_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, _, err := c.ReadFromUDPAddrPort(buf); err == nil {
				break
			}
		}
	}
	b.ReportAllocs()
	b.SetBytes(2 * loadSize)
	var left atomic.Int64
	left.Store(int64(b.N))
	var lost atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := make([]byte, loadSize)
			msg[0] = 'x'
			buf := make([]byte, 2*loadSize)
			for range window {
				_, _ = c.WriteToUDPAddrPort(msg, addr)
			}
			var deadline time.Time
			for left.Add(-1) >= 0 {
				if now := time.Now(); deadline.Sub(now) < 400*time.Millisecond {
					deadline = now.Add(500 * time.Millisecond)
					_ = c.SetReadDeadline(deadline)
				}
				if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
					lost.Add(int64(window))
					for range window {
						_, _ = c.WriteToUDPAddrPort(msg, addr)
					}
					left.Add(1)
					continue
				}
				_, _ = c.WriteToUDPAddrPort(msg, addr)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
	b.ReportMetric(float64(lost.Load()), "lost")
}
