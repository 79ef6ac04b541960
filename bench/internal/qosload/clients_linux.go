//go:build linux

package qosload

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The clients of one measurement are lean, so that the servers, not they,
// set the pace: one thread serves every client socket, blocking in
// epoll_wait, not in the Go runtime's poller (which, in a busy process,
// notices a datagram up to 10 ms late), and at a fixed rate a second
// thread sends, sleeping in the kernel between sends.

// client is one client socket (non-blocking) and what it sent.
type client struct {
	id   int
	fd   int
	port int
	req  []byte
	sent atomic.Int64
	got  int64 // answers read; only the reading thread touches it
}

// idle is how long the clients wait without an answer: a closed loop
// refills its windows, and after the last send the clients stop reading.
const idle = 200 * time.Millisecond

func dialClient(id int, raddr *net.UDPAddr) (*client, error) {
	ip4 := raddr.IP.To4()
	if ip4 == nil {
		return nil, fmt.Errorf("%v: the clients dial IPv4 addresses only", raddr)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	c := &client{id: id, fd: fd, req: make([]byte, 0, 64)}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	to := &unix.SockaddrInet4{Port: raddr.Port}
	copy(to.Addr[:], ip4)
	if err := unix.Connect(fd, to); err != nil {
		unix.Close(fd)
		return nil, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	c.port = sa.(*unix.SockaddrInet4).Port
	return c, nil
}

// send sends one request stamped with the time since start.
func (c *client) send(seq uint8, start time.Time) { c.sendAt(seq, time.Since(start)) }

// sendAt sends one request stamped with at, a time since the start.
func (c *client) sendAt(seq uint8, at time.Duration) {
	c.req = appendRequest(c.req[:0], seq, c.id, at)
	for {
		_, err := unix.Write(c.fd, c.req)
		if err != unix.EINTR {
			if err == nil {
				c.sent.Add(1)
			}
			return
		}
	}
}

// poller waits for answers on every client socket.
type poller struct {
	ep     int
	cs     []*client
	events []unix.EpollEvent
	buf    []byte
}

func newPoller(cs []*client) (*poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	for i, c := range cs {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			unix.Close(ep)
			return nil, err
		}
	}
	return &poller{ep: ep, cs: cs, events: make([]unix.EpollEvent, len(cs)), buf: make([]byte, 2048)}, nil
}

// wait calls each answer's client with it, until a wait of idle passes
// without one (false) or each returns false (true).
func (p *poller) wait(each func(c *client, b []byte) bool) (bool, error) {
	for {
		n, err := unix.EpollWait(p.ep, p.events, int(idle/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
		for _, ev := range p.events[:n] {
			c := p.cs[ev.Fd]
			for {
				k, err := unix.Read(c.fd, p.buf)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					break // EAGAIN: read all; ECONNREFUSED: nobody there yet
				}
				c.got++
				if !each(c, p.buf[:k]) {
					return true, nil
				}
			}
		}
	}
}

// clients runs j: j.Clients sockets against j.Addr for j.Duration.
func clients(j job) (loadResult, error) {
	runtime.LockOSThread()
	raddr, err := net.ResolveUDPAddr("udp4", j.Addr)
	if err != nil {
		return loadResult{}, err
	}
	cs := make([]*client, j.Clients)
	for i := range cs {
		if cs[i], err = dialClient(i, raddr); err != nil {
			return loadResult{}, err
		}
		defer unix.Close(cs[i].fd)
	}
	p, err := newPoller(cs)
	if err != nil {
		return loadResult{}, err
	}
	defer unix.Close(p.ep)
	stopSampling := sampleQueues(raddr.Port, cs)
	res := loadResult{RTTs: make([]time.Duration, 0, 1<<18)}
	start := time.Now()
	stopAt := start.Add(j.Duration)
	record := func(b []byte) {
		if at, ok := stampOf(b, j.EchoOffset); ok {
			res.RTTs = append(res.RTTs, time.Since(start)-at)
		}
	}
	if j.Rate > 0 {
		sending := make(chan time.Duration, 1)
		go func() {
			runtime.LockOSThread()
			pace(cs, float64(j.Rate), start, stopAt)
			sending <- time.Since(start)
		}()
		var sent time.Duration
		done := false // the sender has stopped
		senderDone := func() bool {
			if !done {
				select {
				case sent = <-sending:
					done = true
				default:
				}
			}
			return done
		}
		for {
			_, err := p.wait(func(_ *client, b []byte) bool {
				record(b)
				return !senderDone() || !answeredAll(cs)
			})
			if err != nil {
				return loadResult{}, err
			}
			// Once the sender has stopped: every request is answered (ok),
			// or idle passed without an answer and the rest is lost.
			if senderDone() {
				break
			}
		}
		res.Elapsed = sent
		res.Responses = len(res.RTTs)
	} else {
		for _, c := range cs {
			for i := range j.Inflight {
				c.send(uint8(i), start)
			}
		}
		seq := uint8(0)
		for time.Now().Before(stopAt) {
			ok, err := p.wait(func(c *client, b []byte) bool {
				record(b)
				seq++
				c.send(seq, start)
				return time.Now().Before(stopAt)
			})
			if err != nil {
				return loadResult{}, err
			}
			if !ok && time.Now().Before(stopAt) {
				// No answer for idle: refill every window; what was
				// outstanding is lost or late.
				for _, c := range cs {
					for i := range j.Inflight {
						c.send(uint8(i), start)
					}
				}
			}
		}
		res.Elapsed = time.Since(start)
		res.Responses = len(res.RTTs)
		// Late answers count as received, not as answered in time.
		if !answeredAll(cs) {
			if _, err := p.wait(func(*client, []byte) bool { return !answeredAll(cs) }); err != nil {
				return loadResult{}, err
			}
		}
	}
	for _, c := range cs {
		res.Lost += int(c.sent.Load() - c.got)
	}
	res.QueuedServer, res.QueuedClients = stopSampling()
	return res, nil
}

func answeredAll(cs []*client) bool {
	for _, c := range cs {
		if c.got < c.sent.Load() {
			return false
		}
	}
	return true
}

// pace sends rate requests a second over the client sockets in turn until
// stopAt, whatever the answers do, sleeping in the kernel between sends.
// Each request is stamped with the time it was due, not the time it went:
// a sender that fell behind shows in the round-trip times rather than
// hiding a server's stall. It stops at stopAt however far behind it is.
func pace(cs []*client, rate float64, start, stopAt time.Time) {
	interval := max(time.Duration(float64(time.Second)/rate), 1)
	due := time.Duration(0)
	for i := 0; ; i++ {
		now := time.Since(start)
		if start.Add(now).After(stopAt) {
			return
		}
		if d := due - now; d > 0 {
			ts := unix.NsecToTimespec(int64(d))
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
		}
		cs[i%len(cs)].sendAt(uint8(i), due)
		due += interval
	}
}

// sampleQueues samples, every millisecond until the returned function is
// called, the receive queues of the target's sockets (every IPv4 socket
// bound to port: the server's) and of the clients, from /proc/net/udp;
// the function returns their means in datagrams, or zeros where the file
// cannot be read.
func sampleQueues(port int, cs []*client) (stop func() (server, clients float64)) {
	mine := make(map[int]bool, len(cs))
	for _, c := range cs {
		mine[c.port] = true
	}
	size := datagramTruesize()
	quit, done := make(chan struct{}), make(chan [2]float64, 1)
	go func() {
		var server, clients, samples float64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				if samples == 0 || size == 0 {
					done <- [2]float64{}
					return
				}
				done <- [2]float64{server / samples / size, clients / samples / size}
				return
			case <-t.C:
			}
			if s, c, ok := udpQueues(port, mine); ok {
				server, clients, samples = server+s, clients+c, samples+1
			}
		}
	}()
	return func() (float64, float64) {
		close(quit)
		q := <-done
		return q[0], q[1]
	}
}

// udpQueues sums the receive queues (bytes, as the kernel charges them)
// of the IPv4 UDP sockets bound to port, and of those bound to the ports
// in clients.
func udpQueues(port int, clients map[int]bool) (server, client float64, ok bool) {
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		_, local, ok1 := strings.Cut(f[1], ":")
		_, rx, ok2 := strings.Cut(f[4], ":")
		p, err1 := strconv.ParseUint(local, 16, 16)
		q, err2 := strconv.ParseUint(rx, 16, 32)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			continue
		}
		switch {
		case int(p) == port:
			server += float64(q)
		case clients[int(p)]:
			client += float64(q)
		}
	}
	return server, client, true
}

// datagramTruesize is what the kernel charges a receive queue for one
// request-sized datagram on loopback, measured on a socket of its own; zero
// if it cannot tell.
func datagramTruesize() float64 {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0
	}
	defer rx.Close()
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return 0
	}
	defer tx.Close()
	if _, err := tx.Write(make([]byte, 3+len(title)+11)); err != nil {
		return 0
	}
	port := rx.LocalAddr().(*net.UDPAddr).Port
	for range 100 {
		if q, _, ok := udpQueues(port, nil); ok && q > 0 {
			return q
		}
		time.Sleep(time.Millisecond)
	}
	return 0
}
