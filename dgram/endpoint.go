package dgram

import (
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Handing sockets over across a reload.
//
// A socket's receive queue is the kernel's: closing a socket drops the
// datagrams queued in it, and a reply written through a closed socket is
// lost. So a reload must not swap sockets: a configuration that opened
// sockets of its own beside the old ones (SO_REUSEPORT) and closed the old
// ones when it took over lost whatever the kernel had queued in them, and
// the old readers' replies of their last batch. An Endpoint keeps the
// sockets of an address and their readers for as long as any
// configuration serves the address, and each configuration is a Server
// attached to it: the newest attached serves every datagram read from
// then on, and detaching the old one waits until no reader is still
// handing it a datagram. Nothing is closed, and each datagram is read
// once, by a reader that serves it whole, replies included.

// EndpointConfig is how an Endpoint reads its sockets.
type EndpointConfig struct {
	// Batch is how many datagrams one system call reads or writes where
	// the platform can (recvmmsg and sendmmsg on Linux); 1 reads one at a
	// time. Default: DefaultBatch.
	Batch int
	// ReadBuffer and WriteBuffer are the socket buffer sizes asked of the
	// kernel, in bytes; 0 leaves the system's default. The kernel may grant
	// less (net.core.rmem_max and net.core.wmem_max on Linux): the
	// endpoint then tries SO_RCVBUFFORCE/SO_SNDBUFFORCE, and logs a warning
	// naming the sysctl if that fails too.
	ReadBuffer, WriteBuffer int
	// Logger receives warnings and debug messages. Default: none.
	Logger *zap.Logger
}

// Endpoint reads sockets, one reader each, and hands each datagram to the
// Server attached last. It outlives the Servers attached to it: see
// "Handing sockets over across a reload" above.
type Endpoint struct {
	batch  int
	logger *zap.Logger
	// newIO makes each reader's I/O; nil: newPacketIO. Tests set it to
	// make a socket fail.
	newIO func(conn *net.UDPConn, batch int) packetIO
	// steerWindow is the window of steering (steer.go); 0: steerWindow.
	steerWindow time.Duration

	mu          sync.Mutex
	readBuffer  int // guarded by mu, as are the maps
	writeBuffer int
	// servers are those attached, oldest first; current is the last.
	servers []*Server
	current atomic.Pointer[Server]
	conns   map[net.PacketConn]*reader
	closing atomic.Bool
	readers sync.WaitGroup
	// warned says which buffer shortfall (receive, send) has been logged:
	// once each per endpoint, not once for both.
	warned [2]atomic.Bool
	// sized holds the sockets Server.SizeBuffers has sized, so serving
	// them does not size them again.
	sized map[*net.UDPConn]bool
	// steerers holds the steering of each address served (steer.go), by
	// network and address.
	steerers map[string]*steerer
}

// NewEndpoint returns an endpoint with no socket and no server.
func NewEndpoint(cfg EndpointConfig) *Endpoint {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Endpoint{
		batch: cfg.Batch, logger: cfg.Logger,
		readBuffer: cfg.ReadBuffer, writeBuffer: cfg.WriteBuffer,
		conns:    make(map[net.PacketConn]*reader),
		sized:    make(map[*net.UDPConn]bool),
		steerers: make(map[string]*steerer),
	}
}

// Batch is how many datagrams the endpoint's readers read at once.
func (e *Endpoint) Batch() int { return e.batch }

// Add sizes pc's buffers and starts a reader on it, on a goroutine of its
// own, until Close; it returns the buffers the kernel granted. pc must be
// a *net.UDPConn or wrap one (an Unwrap() net.PacketConn method, as
// Caddy's listeners have); the endpoint owns it from then on, and closes
// it if it refuses it (after Close, or not a UDP socket).
func (e *Endpoint) Add(pc net.PacketConn) (Buffers, error) {
	conn, err := udpConnOf(pc)
	if err != nil {
		pc.Close()
		return Buffers{}, err
	}
	got := e.sizeBuffers(conn)
	e.mu.Lock()
	e.sized[conn] = true
	e.mu.Unlock()
	r, err := e.register(pc)
	if err != nil {
		return Buffers{}, err
	}
	go func() {
		if err := r.serve(); err != nil && !errors.Is(err, ErrServerClosed) {
			e.logger.Error("UDP reader stopped on a socket error; the socket is closed and the address's other readers serve on",
				zap.Stringer("address", conn.LocalAddr()), zap.Error(err))
		}
	}()
	return got, nil
}

// SetBuffers sizes every socket's buffers, and those of sockets added
// later, to read and write bytes (0: leave them), and returns the smallest
// the kernel granted.
func (e *Endpoint) SetBuffers(read, write int) Buffers {
	e.mu.Lock()
	e.readBuffer, e.writeBuffer = read, write
	conns := make([]*net.UDPConn, 0, len(e.conns))
	for _, r := range e.conns {
		conns = append(conns, r.conn)
	}
	e.mu.Unlock()
	var granted Buffers
	for i, conn := range conns {
		b := e.sizeBuffers(conn)
		if i == 0 {
			granted = b
		}
		granted.Read, granted.Write = min(granted.Read, b.Read), min(granted.Write, b.Write)
	}
	return granted
}

// Attach makes s serve every datagram read from now on, until it is
// detached or another server is attached.
func (e *Endpoint) Attach(s *Server) {
	s.init()
	e.attach(s)
}

func (e *Endpoint) attach(s *Server) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.servers = append(slices.DeleteFunc(e.servers, func(o *Server) bool { return o == s }), s)
	e.current.Store(s)
}

// Detach stops handing datagrams to s and returns when no reader is
// still serving one with it, so that s's protocols may be cleaned up. The
// server attached before s serves again if s was the last: a configuration
// that failed to start gives the address back to the one still running.
func (e *Endpoint) Detach(s *Server) {
	e.mu.Lock()
	e.servers = slices.DeleteFunc(e.servers, func(o *Server) bool { return o == s })
	var next *Server
	if n := len(e.servers); n > 0 {
		next = e.servers[n-1]
	}
	e.current.Store(next)
	readers := make([]*reader, 0, len(e.conns))
	for _, r := range e.conns {
		readers = append(readers, r)
	}
	e.mu.Unlock()
	// A reader holds its lock from taking the current server until its
	// batch is served and its replies written: once each lock has been
	// free, every batch still to come takes the server attached now.
	for _, r := range readers {
		r.mu.Lock()
		r.mu.Unlock() //nolint:staticcheck // waiting for the batch is the point
	}
}

// register takes pc for a reader, or closes it and reports why not.
func (e *Endpoint) register(pc net.PacketConn) (*reader, error) {
	conn, err := udpConnOf(pc)
	if err != nil {
		pc.Close()
		return nil, err
	}
	e.mu.Lock()
	if e.closing.Load() {
		e.mu.Unlock()
		pc.Close()
		return nil, ErrServerClosed
	}
	r := newReader(e, conn)
	r.pc = pc
	e.conns[pc] = r
	e.readers.Add(1)
	sized := e.sized[conn]
	delete(e.sized, conn)
	e.mu.Unlock()
	if !sized {
		e.sizeBuffers(conn)
	}
	return r, nil
}

// Close stops every reader, closes every socket, and returns when the
// readers have returned. A datagram read after the last server was
// detached is dropped.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	e.closing.Store(true)
	// Detach each steered address's program through one of its sockets
	// while they are open: the group may outlive this endpoint (a reload
	// that changes how an address is read opens an endpoint beside it).
	for _, r := range e.conns {
		addr := r.conn.LocalAddr().Network() + "/" + r.conn.LocalAddr().String()
		if st := e.steerers[addr]; st != nil && !st.off.Load() {
			st.off.Store(true) // detached once
			e.unsteer(r.conn, addr)
		}
	}
	var errs []error
	for pc := range e.conns {
		errs = append(errs, pc.Close())
		delete(e.conns, pc)
	}
	e.mu.Unlock()
	e.readers.Wait()
	return errors.Join(errs...)
}

func (e *Endpoint) sizeBuffers(conn *net.UDPConn) Buffers {
	e.mu.Lock()
	read, write := e.readBuffer, e.writeBuffer
	e.mu.Unlock()
	var granted Buffers
	for i, b := range []struct {
		want   int
		read   bool
		sysctl string
	}{{read, true, "net.core.rmem_max"}, {write, false, "net.core.wmem_max"}} {
		if b.want <= 0 {
			continue
		}
		got, err := setBuffer(conn, b.want, b.read)
		if err != nil {
			e.logger.Warn("setting the UDP socket buffer", zap.Bool("receive", b.read), zap.Error(err))
			continue
		}
		if b.read {
			granted.Read = got
		} else {
			granted.Write = got
		}
		if got < b.want && !e.warned[i].Swap(true) {
			e.logger.Warn("the kernel granted a smaller UDP socket buffer than configured: raise "+b.sysctl+" (sysctl -w "+b.sysctl+"=...) or run with CAP_NET_ADMIN",
				zap.Bool("receive", b.read), zap.Int("wanted", b.want), zap.Int("granted", got))
		}
	}
	return granted
}

// reader is one reader goroutine's state: its buffers, allocated once.
type reader struct {
	e      *Endpoint
	pc     net.PacketConn
	conn   *net.UDPConn
	io     packetIO
	in     []message
	w      Writer
	counts [numCounts]uint64
	steer  readerSteer
	// mu is held while a batch is served: see Detach.
	mu sync.Mutex
}

func newReader(e *Endpoint, conn *net.UDPConn) *reader {
	newIO := e.newIO
	if newIO == nil {
		newIO = newPacketIO
	}
	r := &reader{e: e, conn: conn, io: newIO(conn, e.batch)}
	r.in = make([]message, e.batch)
	bufs := make([]byte, e.batch*(MaxDatagram+1))
	for i := range r.in {
		r.in[i].buf = bufs[i*(MaxDatagram+1) : (i+1)*(MaxDatagram+1)]
	}
	r.w.init(r.io, &Conn{udp: conn}, e.batch, &r.counts)
	return r
}

// serve reads until the endpoint closes or the socket fails. A failed
// socket is closed rather than left bound with no reader, which would
// keep receiving its share of the port.
func (r *reader) serve() error {
	defer r.e.readers.Done()
	e := r.e
	r.steer = readerSteer{st: e.steererOf(r.conn, r.io), conn: r.conn}
	err := r.run()
	if r.steer.st != nil {
		r.steer.st.release(r.conn) // while conn is open: the last detaches
	}
	if !errors.Is(err, ErrServerClosed) {
		e.mu.Lock()
		delete(e.conns, r.pc)
		e.mu.Unlock()
		r.pc.Close()
	}
	return err
}

func (r *reader) run() error {
	for {
		n, err := r.io.read(r.in)
		if err != nil {
			if r.e.closing.Load() || errors.Is(err, net.ErrClosed) {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// A deadline someone else set (a shared socket's previous
				// user stopping): clear it and read on.
				_ = r.conn.SetReadDeadline(time.Time{})
				continue
			}
			if retryable(err) {
				continue
			}
			return err
		}
		r.handle(n)
		r.steer.observe(n)
	}
}

// handle serves the n datagrams read with the server attached now, and
// writes their replies, under r.mu (see Detach).
func (r *reader) handle(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.e.current.Load()
	if s == nil {
		return // no server attached: the endpoint is closing
	}
	for i := range n {
		m := &r.in[i]
		r.counts[countReceived]++
		if m.n > MaxDatagram {
			r.counts[countDropTooLarge]++
			continue
		}
		if !offer(s.Protocols, &r.w, m.addr, m.buf[:m.n]) {
			r.counts[countDropNoProtocol]++
		}
	}
	r.w.Flush()
	s.Stats.add(&r.counts)
}
