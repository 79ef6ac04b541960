package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// ClientConfig is how a relay Client behaves. The defaults are the shipped
// Unity Transport client's.
type ClientConfig struct {
	// Server is the relay's host:port.
	Server string
	// Local is the local address to send from. Default: any.
	Local string
	// The allocation to bind: its ID, key and connection data, as the
	// allocations API returned them.
	AllocationID   wirerelay.AllocationID
	Key            []byte
	ConnectionData []byte
	// BindRetry is the pause between BINDs until BIND_RECEIVED (each with
	// the nonce incremented), up to BindAttempts. Default: 1s, 60.
	BindRetry    time.Duration
	BindAttempts int
	// ConnectRetry is the pause between CONNECT_REQUESTs until ACCEPTED.
	// Default: 1s.
	ConnectRetry time.Duration
	// PingAfter: a PING is sent when nothing has been sent for this long.
	// Default: 3s.
	PingAfter time.Duration
	// RebindAfter: the client binds again when nothing has been received
	// for this long. Default: 9s.
	RebindAfter time.Duration
	// Exact sends BINDs and CONNECT_REQUESTs in the exact layout (the length
	// byte equal to the data's length) instead of the shipped client's
	// 255-byte padded one.
	Exact bool
	// NonceBigEndian writes BIND nonces big-endian.
	NonceBigEndian bool
	// Buffer is the number of received RELAY messages held for Receive.
	// Default: 4096.
	Buffer int
}

// Message is a RELAY payload received from a peer.
type Message struct {
	From    wirerelay.AllocationID
	Content []byte
}

// Client errors.
var (
	ErrRejected   = errors.New("relay: the host is at its maximum number of connections")
	ErrGivenUp    = errors.New("relay: the relay ended the allocation")
	ErrNotBound   = errors.New("relay: no BIND_RECEIVED after every attempt")
	ErrClientDone = errors.New("relay: client closed")
)

// Client talks to a relay for one allocation, as the shipped client does:
// it re-sends BIND every second until BIND_RECEIVED, re-sends
// CONNECT_REQUEST until ACCEPTED, pings after 3 s without sending, re-binds
// after 9 s without receiving or on ERROR 3, and gives the allocation up on
// ERROR 1 or 4.
type Client struct {
	cfg    ClientConfig
	conn   *net.UDPConn
	server *net.UDPAddr

	nonce    atomic.Uint32
	lastSent atomic.Int64
	lastRecv atomic.Int64
	rebinds  atomic.Int64
	// rebinding is set while a re-bind runs, so repeated ERROR 3s start
	// one.
	rebinding atomic.Bool

	mu        sync.Mutex
	boundCh   chan struct{} // closed at the next BIND_RECEIVED
	connectCh chan connectResult
	fatal     error

	recv chan Message
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

type connectResult struct {
	host wirerelay.AllocationID
	err  error
}

// Dial opens a socket, binds the allocation and starts the keep-alive.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.BindRetry == 0 {
		cfg.BindRetry = time.Second
	}
	if cfg.BindAttempts == 0 {
		cfg.BindAttempts = 60
	}
	if cfg.ConnectRetry == 0 {
		cfg.ConnectRetry = time.Second
	}
	if cfg.PingAfter == 0 {
		cfg.PingAfter = 3 * time.Second
	}
	if cfg.RebindAfter == 0 {
		cfg.RebindAfter = 9 * time.Second
	}
	if cfg.Buffer == 0 {
		cfg.Buffer = 4096
	}
	if len(cfg.Key) != wirerelay.KeySize {
		return nil, wirerelay.ErrKeySize
	}
	server, err := net.ResolveUDPAddr("udp", cfg.Server)
	if err != nil {
		return nil, err
	}
	var local *net.UDPAddr
	if cfg.Local != "" {
		if local, err = net.ResolveUDPAddr("udp", cfg.Local); err != nil {
			return nil, err
		}
	}
	conn, err := net.ListenUDP("udp", local)
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg: cfg, conn: conn, server: server,
		boundCh: make(chan struct{}),
		recv:    make(chan Message, cfg.Buffer),
		done:    make(chan struct{}),
	}
	now := time.Now().UnixNano()
	c.lastSent.Store(now)
	c.lastRecv.Store(now)
	c.wg.Add(1)
	go c.readLoop()
	if err := c.Bind(ctx); err != nil {
		c.Close()
		return nil, err
	}
	c.wg.Add(1)
	go c.keepAlive()
	return c, nil
}

// LocalAddr is the client's socket address.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Rebinds counts the BINDs after the first successful one.
func (c *Client) Rebinds() int64 { return c.rebinds.Load() }

// Nonce is the nonce of the last BIND sent.
func (c *Client) Nonce() uint16 { return uint16(c.nonce.Load()) }

func (c *Client) write(b []byte) error {
	_, err := c.conn.WriteToUDP(b, c.server)
	if err == nil {
		c.lastSent.Store(time.Now().UnixNano())
	}
	return err
}

func (c *Client) bindMessage(nonce uint16) ([]byte, error) {
	o := wirerelay.Options{Padded: !c.cfg.Exact, NonceBigEndian: c.cfg.NonceBigEndian}
	m := wirerelay.Bind{Nonce: nonce, ConnectionData: c.cfg.ConnectionData}
	if err := m.Sign(c.cfg.Key, o); err != nil {
		return nil, err
	}
	return m.AppendWith(nil, o)
}

// Bind sends BINDs, one per BindRetry with the nonce incremented each time
// after the first, until BIND_RECEIVED arrives.
func (c *Client) Bind(ctx context.Context) error {
	c.mu.Lock()
	ch := c.boundCh
	c.mu.Unlock()
	for attempt := 0; attempt < c.cfg.BindAttempts; attempt++ {
		if attempt > 0 {
			c.nonce.Add(1)
		}
		msg, err := c.bindMessage(uint16(c.nonce.Load()))
		if err != nil {
			return err
		}
		if err := c.write(msg); err != nil {
			return err
		}
		t := time.NewTimer(c.cfg.BindRetry)
		select {
		case <-ch:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-c.done:
			t.Stop()
			return c.err()
		case <-t.C:
		}
	}
	return ErrNotBound
}

// rebind binds again with the next nonce (after an address change, silence
// or ERROR 3).
func (c *Client) rebind() {
	if !c.rebinding.CompareAndSwap(false, true) {
		return // a re-bind is already under way
	}
	defer c.rebinding.Store(false)
	c.rebinds.Add(1)
	c.mu.Lock()
	select {
	case <-c.boundCh:
		c.boundCh = make(chan struct{})
	default:
	}
	c.mu.Unlock()
	c.nonce.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.cfg.BindAttempts)*c.cfg.BindRetry)
	defer cancel()
	_ = c.Bind(ctx)
}

// Connect asks the relay to connect this client to the host whose
// connection data is given, re-sending until ACCEPTED, and returns the
// host's allocation ID (ACCEPTED's From).
func (c *Client) Connect(ctx context.Context, hostConnectionData []byte) (wirerelay.AllocationID, error) {
	ch := make(chan connectResult, 1)
	c.mu.Lock()
	c.connectCh = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.connectCh = nil
		c.mu.Unlock()
	}()
	req := wirerelay.ConnectRequest{AllocationID: c.cfg.AllocationID, ToConnectionData: hostConnectionData}
	var msg []byte
	var err error
	if c.cfg.Exact {
		msg, err = req.AppendTo(nil)
	} else {
		msg, err = req.AppendShipped(nil)
	}
	if err != nil {
		return wirerelay.AllocationID{}, err
	}
	for {
		if err := c.write(msg); err != nil {
			return wirerelay.AllocationID{}, err
		}
		t := time.NewTimer(c.cfg.ConnectRetry)
		select {
		case r := <-ch:
			t.Stop()
			return r.host, r.err
		case <-ctx.Done():
			t.Stop()
			return wirerelay.AllocationID{}, ctx.Err()
		case <-c.done:
			t.Stop()
			return wirerelay.AllocationID{}, c.err()
		case <-t.C:
		}
	}
}

// Send relays content to the peer to.
func (c *Client) Send(to wirerelay.AllocationID, content []byte) error {
	select {
	case <-c.done:
		return c.err()
	default:
	}
	m := wirerelay.Relay{From: c.cfg.AllocationID, To: to, Content: content}
	b, err := m.AppendTo(make([]byte, 0, m.Len()))
	if err != nil {
		return err
	}
	return c.write(b)
}

// Disconnect tells the relay, and through it the peer, that this client
// leaves the connection with peer.
func (c *Client) Disconnect(peer wirerelay.AllocationID) error {
	b, _ := (&wirerelay.Disconnect{From: c.cfg.AllocationID, To: peer}).AppendTo(nil)
	return c.write(b)
}

// Receive returns the next RELAY message, or an error once the relay has
// ended the allocation or the client is closed.
func (c *Client) Receive(ctx context.Context) (Message, error) {
	select {
	case m := <-c.recv:
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	case <-c.done:
		select {
		case m := <-c.recv:
			return m, nil
		default:
		}
		return Message{}, c.err()
	}
}

// SendRaw sends bytes to the relay as they are (for tests of the relay's
// handling of what clients should not send).
func (c *Client) SendRaw(b []byte) error { return c.write(b) }

func (c *Client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fatal != nil {
		return c.fatal
	}
	return ErrClientDone
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	c.once.Do(func() { close(c.done) })
}

// Close sends CLOSE (best effort) and releases the socket.
func (c *Client) Close() error {
	if b, err := (&wirerelay.Close{AllocationID: c.cfg.AllocationID}).AppendTo(nil); err == nil {
		_, _ = c.conn.WriteToUDP(b, c.server)
	}
	c.once.Do(func() { close(c.done) })
	err := c.conn.Close()
	c.wg.Wait()
	return err
}

func (c *Client) readLoop() {
	defer c.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := c.conn.ReadFromUDP(buf)
		if err != nil {
			c.fail(ErrClientDone)
			return
		}
		if from.Port != c.server.Port || !from.IP.Equal(c.server.IP) {
			continue // only the relay speaks to a relay client
		}
		c.lastRecv.Store(time.Now().UnixNano())
		c.handle(buf[:n])
	}
}

func (c *Client) handle(b []byte) {
	t, err := wirerelay.PeekHeader(b)
	if err != nil {
		return
	}
	switch t {
	case wirerelay.TypeBindReceived:
		c.mu.Lock()
		select {
		case <-c.boundCh:
		default:
			close(c.boundCh)
		}
		c.mu.Unlock()
	case wirerelay.TypeAccepted, wirerelay.TypeRejected:
		var m wirerelay.Accepted
		r := connectResult{}
		if t == wirerelay.TypeAccepted {
			if m.Decode(b) != nil || m.To != c.cfg.AllocationID {
				return
			}
			r.host = m.From
		} else {
			var rej wirerelay.Rejected
			if rej.Decode(b) != nil || rej.To != c.cfg.AllocationID {
				return
			}
			r.host, r.err = rej.From, ErrRejected
		}
		c.mu.Lock()
		ch := c.connectCh
		c.mu.Unlock()
		if ch != nil {
			select {
			case ch <- r:
			default:
			}
		}
	case wirerelay.TypeRelay:
		var m wirerelay.Relay
		if m.Decode(b) != nil || m.To != c.cfg.AllocationID {
			return
		}
		msg := Message{From: m.From, Content: append([]byte(nil), m.Content...)}
		select {
		case c.recv <- msg:
		case <-c.done:
		}
	case wirerelay.TypeError:
		var m wirerelay.Error
		if m.Decode(b) != nil {
			return
		}
		switch m.Code {
		case wirerelay.CodeClientPlayerMismatch:
			go c.rebind()
		case wirerelay.CodeTimeout, wirerelay.CodeAllocationNotFound:
			c.fail(fmt.Errorf("%w: ERROR %v", ErrGivenUp, m.Code))
		}
	}
}

func (c *Client) keepAlive() {
	defer c.wg.Done()
	tick := time.NewTicker(min(c.cfg.PingAfter, c.cfg.RebindAfter) / 4)
	defer tick.Stop()
	ping, _ := (&wirerelay.Ping{AllocationID: c.cfg.AllocationID, Number: 1}).AppendTo(nil)
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		now := time.Now().UnixNano()
		if now-c.lastRecv.Load() >= int64(c.cfg.RebindAfter) {
			c.lastRecv.Store(now)
			go c.rebind()
			continue
		}
		if now-c.lastSent.Load() >= int64(c.cfg.PingAfter) {
			_ = c.write(ping)
		}
	}
}
