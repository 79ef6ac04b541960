package dgram

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Steering an address's datagrams over its sockets.
//
// With one reader per SO_REUSEPORT socket, the kernel spreads an address's
// datagrams over the sockets by a hash of each source. Under load that is
// what the readers are for; under light load it costs latency: each reader
// finds one datagram, wakes for it on a CPU of its own and parks again,
// where one reader would have found the next datagram already waiting (on
// loopback with four clients and one request in flight each, two readers
// make a quarter more system calls per round trip than one). So where the
// platform lets a program choose the socket (a classic BPF program on the
// SO_REUSEPORT group, Linux), an address's datagrams all go to the group's
// first socket while its reader keeps up, and are spread by source when it
// does not: when it reads at least half a batch four times running. Once
// the readers together read less than an eighth of a batch per read, and
// never half a batch, for a whole window, one socket takes them all again.
// A switch may reorder the datagrams of a source that were in flight
// across it, as UDP allows.
//
// The program belongs to the group, not to a socket. A reload keeps an
// address's endpoint, and with it the program and its mode; a reload that
// changes how the address is read (its readers or batch) opens a second
// endpoint beside the first, whose sockets then share the program: each
// endpoint applies its mode again at the end of each window, so the
// survivor's holds. An endpoint that does not steer (a batch too small to
// tell a backlog) detaches it when it starts serving a socket, and an
// endpoint detaches it when the last reader of an address goes (Close, or
// every socket failed), so a group never keeps a program nobody applies. The
// program is attached only where the kernel can detach it again (Linux
// 5.3 and later): a program that cannot be detached would send every
// datagram to one socket for the life of the group.
const (
	// steerWindow is how often an endpoint reconsiders an address's mode.
	steerWindow = time.Second
	// steerBusyRun is how many reads of half a batch or more in a row
	// make the one socket's reader spread the datagrams.
	steerBusyRun = 4
	// steerMinBatch is the smallest batch that tells a backlog: with
	// smaller ones, every read looks busy, and the kernel spreads.
	steerMinBatch = 8
)

// Steering modes of an address.
const (
	steerOne    = iota // every datagram to the group's first socket
	steerSpread        // by source, the kernel's hash
)

// steerer holds the steering of one address: the readers of its sockets
// share it.
type steerer struct {
	e       *Endpoint
	addr    string
	batch   int
	window  int64        // nanoseconds
	mode    atomic.Int32 // steerOne or steerSpread
	off     atomic.Bool  // the kernel refused: its hash decides, as without steering
	start   atomic.Int64 // the window's start (monotonic)
	reads   atomic.Int64 // in the window, with mode steerSpread
	read    atomic.Int64 // datagrams read in the window
	busy    atomic.Int64 // reads of half a batch or more in the window
	readers int          // guarded by e.mu
}

// steererOf returns the steering of conn's address, shared by the readers
// of its sockets, or nil where the endpoint cannot tell a backlog.
func (e *Endpoint) steererOf(conn *net.UDPConn, io packetIO) *steerer {
	addr := conn.LocalAddr().Network() + "/" + conn.LocalAddr().String()
	if _, single := io.(singleIO); single || e.batch < steerMinBatch {
		// No steering: a program another endpoint of the group attached
		// (before a reload that changed how the address is read) goes.
		e.unsteer(conn, addr)
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.steerers[addr]
	if st == nil {
		window := e.steerWindow
		if window <= 0 {
			window = steerWindow
		}
		st = &steerer{e: e, addr: addr, batch: e.batch, window: int64(window)}
		st.start.Store(monotonic())
		st.mode.Store(steerOne)
		// Detaching first tells whether the kernel can detach at all; a
		// socket without SO_REUSEPORT, or without BPF, fails here or at
		// the attach: the kernel decides.
		if steerTo(conn, steerSpread) != nil || steerTo(conn, steerOne) != nil {
			st.off.Store(true)
		}
		e.steerers[addr] = st
	}
	st.readers++
	return st
}

// release forgets a reader of st's address whose socket conn is still
// open; the last one detaches the program.
func (st *steerer) release(conn *net.UDPConn) {
	st.e.mu.Lock()
	last := false
	if st.readers--; st.readers == 0 {
		delete(st.e.steerers, st.addr)
		last = !st.off.Load() && !st.e.closing.Load() // Close detaches
	}
	st.e.mu.Unlock()
	if last {
		st.e.unsteer(conn, st.addr)
	}
}

// unsteer detaches any program from the SO_REUSEPORT group of conn, whose
// address is addr; where the kernel refuses, it logs that every datagram
// may go to one socket.
func (e *Endpoint) unsteer(conn *net.UDPConn, addr string) {
	err := steerTo(conn, steerSpread)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return // detached, none attached, or not an SO_REUSEPORT socket
	}
	e.logger.Error("detaching the UDP steering program from the address's sockets failed; every datagram of the address may go to one socket until they are all closed",
		zap.String("address", addr), zap.Error(err))
}

// readerSteer is one reader's view of its address's steering.
type readerSteer struct {
	st      *steerer
	conn    *net.UDPConn
	busyRun int
}

// observe accounts for one read of n datagrams and switches the address's
// mode when the load says so.
func (r *readerSteer) observe(n int) {
	st := r.st
	if st == nil || st.off.Load() {
		return
	}
	busy := n*2 >= st.batch
	switch st.mode.Load() {
	case steerOne:
		if !busy {
			r.busyRun = 0
		} else if r.busyRun++; r.busyRun >= steerBusyRun {
			r.busyRun = 0
			st.switchTo(r.conn, steerSpread)
			return
		}
	case steerSpread:
		st.reads.Add(1)
		st.read.Add(int64(n))
		if busy {
			st.busy.Add(1)
		}
	}
	now := monotonic()
	start := st.start.Load()
	if now-start < st.window || !st.start.CompareAndSwap(start, now) {
		return
	}
	// This reader closes the window.
	reads, read, busyReads := st.reads.Swap(0), st.read.Swap(0), st.busy.Swap(0)
	mode := st.mode.Load()
	if mode == steerSpread && busyReads == 0 && read*8 < reads*int64(st.batch) {
		mode = steerOne
	}
	st.switchTo(r.conn, mode)
}

// switchTo sets the mode of st's address through conn, one of its sockets;
// setting the mode it has applies it again.
// After Close began, it does nothing: Close detaches the program.
func (st *steerer) switchTo(conn *net.UDPConn, mode int32) {
	st.e.mu.Lock()
	if st.e.closing.Load() {
		st.e.mu.Unlock()
		return
	}
	old := st.mode.Swap(mode)
	err := steerTo(conn, mode)
	st.e.mu.Unlock()
	if err != nil {
		st.off.Store(true)
		if mode == steerOne {
			st.e.logger.Warn("steering UDP datagrams over the address's sockets failed; the kernel spreads them by source",
				zap.String("address", st.addr), zap.Error(err))
			st.e.unsteer(conn, st.addr)
			return
		}
		st.e.logger.Error("detaching the UDP steering program from the address's sockets failed; every datagram of the address may go to one socket until they are all closed",
			zap.String("address", st.addr), zap.Error(err))
		return
	}
	if old != mode {
		st.start.Store(monotonic())
		st.reads.Store(0)
		st.read.Store(0)
		st.busy.Store(0)
		if ce := st.e.logger.Check(zap.DebugLevel, "UDP steering"); ce != nil {
			ce.Write(zap.String("address", st.addr), zap.Bool("spread", mode == steerSpread))
		}
	}
}

var epoch = time.Now()

// monotonic reads the monotonic clock alone, in nanoseconds: time.Now
// reads the wall clock too, which costs as much again.
func monotonic() int64 { return int64(time.Since(epoch)) }
