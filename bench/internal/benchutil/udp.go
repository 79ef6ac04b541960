package benchutil

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// ListenEcho starts the bare baseline of the UDP workloads: a plain Go
// echo loop on loopback (one reader, ReadFrom, WriteTo), the floor of what
// any UDP echo in Go costs. Closing the connection stops it.
func ListenEcho() (*net.UDPConn, error) {
	return listenLoop(func(from netip.AddrPort) netip.AddrPort { return from })
}

// ListenForwarder starts the bare baseline of the relay workload: a plain
// Go forwarder on loopback (one reader, ReadFrom, WriteTo) sending what b
// sends to a and everything else to b. Closing the connection stops it.
func ListenForwarder(a, b netip.AddrPort) (*net.UDPConn, error) {
	return listenLoop(func(from netip.AddrPort) netip.AddrPort {
		if from == b {
			return a
		}
		return b
	})
}

// listenLoop sends every datagram received on a new loopback socket on to
// the address to picks for its source.
func listenLoop(to func(from netip.AddrPort) netip.AddrPort) (*net.UDPConn, error) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteToUDPAddrPort(buf[:n], to(from))
		}
	}()
	return conn, nil
}

// LoopConn is one client socket of a closed loop, counting the datagrams
// it sends and receives.
type LoopConn struct {
	*net.UDPConn
	Sent, Received int
}

// Send sends b, counting it if it went out.
func (c *LoopConn) Send(b []byte) error {
	_, err := c.Write(b)
	if err == nil {
		c.Sent++
	}
	return err
}

// Loop is one client socket's part of a closed loop.
type Loop struct {
	// Fill sends a window of requests: at the start, and again whenever
	// nothing came for 200ms (the window was lost). Only the first Fill's
	// error ends the loop.
	Fill func() error
	// Answer handles a datagram received while measuring, sending what
	// follows it. Its error ends the loop.
	Answer func(b []byte) error
	// Done, if set, runs once the late answers are counted.
	Done func()
}

// ClosedLoop dials addr from clients sockets, each running the Loop
// newLoop returns for it for d. Every datagram read counts as received;
// after d, late answers are read (until none comes for 200ms) and counted
// too, so that Sent minus Received is what was lost. It returns once every
// socket is done, with the time from the start until the last socket
// stopped sending, or with the first error of a socket (dialling, a first
// Fill, reading, Answer).
func ClosedLoop(addr string, clients int, d time.Duration, newLoop func(i int, c *LoopConn) Loop) (time.Duration, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	stopAt := start.Add(d)
	var wg sync.WaitGroup
	var elapsed atomic.Int64
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			stopped, err := runLoop(raddr, stopAt, func(c *LoopConn) Loop { return newLoop(i, c) })
			if err != nil {
				errs <- err
				return
			}
			for el := int64(stopped.Sub(start)); ; {
				if cur := elapsed.Load(); el <= cur || elapsed.CompareAndSwap(cur, el) {
					break
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return time.Duration(elapsed.Load()), nil
}

// runLoop runs one socket of ClosedLoop and returns when it stopped
// sending.
func runLoop(raddr *net.UDPAddr, stopAt time.Time, newLoop func(c *LoopConn) Loop) (time.Time, error) {
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close()
	c := &LoopConn{UDPConn: conn}
	l := newLoop(c)
	if err := l.Fill(); err != nil {
		return time.Time{}, err
	}
	buf := make([]byte, 2048)
	for time.Now().Before(stopAt) {
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = l.Fill() // the window is lost: refill it
				continue
			}
			return time.Time{}, err
		}
		c.Received++
		if err := l.Answer(buf[:n]); err != nil {
			return time.Time{}, err
		}
	}
	stopped := time.Now()
	// Late answers count as received, not as answered in time.
	for c.Received < c.Sent {
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := conn.Read(buf); err != nil {
			break
		}
		c.Received++
	}
	if l.Done != nil {
		l.Done()
	}
	return stopped, nil
}
