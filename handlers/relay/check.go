package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// CheckConfig is a relay check: allocate, join, bind, connect, and measure
// round trips through the relay.
type CheckConfig struct {
	API      *APIClient
	Region   string
	Messages int           // round trips measured; default DefaultCheckMessages
	Size     int           // content bytes per message (≥ 16); default DefaultCheckSize
	Window   int           // messages in flight; default DefaultCheckWindow
	Timeout  time.Duration // for the whole check; default DefaultCheckTimeout
	// LossTimeout: a message whose echo has not come this long after it
	// was sent is lost. Default: DefaultLossTimeout, or a third of Timeout
	// if that is less.
	LossTimeout time.Duration
}

// The defaults of a CheckConfig's options (and of the relay-check
// command's flags).
const (
	DefaultCheckMessages = 100
	DefaultCheckSize     = 64
	DefaultCheckWindow   = 8
	DefaultCheckTimeout  = 30 * time.Second
)

// DefaultLossTimeout is how long an echo may take before its message
// counts as lost: the shipped client re-binds after 9 s of silence, and
// a round trip through a relay takes milliseconds.
const DefaultLossTimeout = 2 * time.Second

// CheckResult is what a relay check measured.
type CheckResult struct {
	Relay        string        `json:"relay"`
	Region       string        `json:"region"`
	HostID       string        `json:"host_allocation"`
	JoinerID     string        `json:"joiner_allocation"`
	JoinCode     string        `json:"join_code"`
	AllocateTime time.Duration `json:"allocate_ns"`
	BindTime     time.Duration `json:"bind_ns"`
	ConnectTime  time.Duration `json:"connect_ns"`
	// Messages is how many round trips were asked for; fewer are sent when
	// the timeout ends the check first.
	Messages int `json:"messages"`
	// LossTimeout is how long an echo could take before its message was
	// lost.
	LossTimeout time.Duration `json:"loss_timeout_ns"`
	EchoResult
}

// EchoConfig is a stream of numbered messages that a joiner sends its
// host, which sends each back through the relay.
type EchoConfig struct {
	// Messages to send; 0: until the context ends.
	Messages int
	// Size is the content of each message in bytes: at least 16 (a
	// sequence number and the time it was sent), at most
	// wirerelay.DefaultMaxRelayContent.
	Size int
	// Window is the number of messages in flight.
	Window int
	// LossTimeout: a message whose echo has not come this long after it
	// was sent is lost, and the next one takes its place in the window.
	LossTimeout time.Duration
}

// EchoResult is what an echo stream measured. Every message sent is
// received, lost or, when the stream ends, neither: Sent = Received + Lost.
type EchoResult struct {
	Sent     int `json:"sent"`
	Received int `json:"received"`
	// Lost counts the messages whose echo did not come within the loss
	// timeout; Late, the echoes of lost messages that came afterwards.
	Lost          int             `json:"lost"`
	Late          int             `json:"late"`
	RoundTrips    []time.Duration `json:"-"`
	P50, P95, P99 time.Duration   `json:"-"`
	P50ms         float64         `json:"rtt_p50_ms"`
	P95ms         float64         `json:"rtt_p95_ms"`
	P99ms         float64         `json:"rtt_p99_ms"`
	// MeanThroughput is in round trips per second.
	MeanThroughput float64 `json:"round_trips_per_second"`
}

// Check runs a relay check the way two game clients would use the relay:
// the host allocates and publishes a join code, the joiner joins with it,
// both bind, the joiner connects, and the joiner's messages are echoed by
// the host back through the relay. It returns within the timeout: the
// messages are sent until LossTimeout before it, so that the last of them
// have their time to come back.
func Check(ctx context.Context, cfg CheckConfig) (*CheckResult, error) {
	if cfg.Messages == 0 {
		cfg.Messages = DefaultCheckMessages
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultCheckSize
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultCheckWindow
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCheckTimeout
	}
	if cfg.LossTimeout == 0 {
		cfg.LossTimeout = min(DefaultLossTimeout, cfg.Timeout/3)
	}
	switch {
	case cfg.Messages < 0:
		return nil, errors.New("the number of messages must be positive")
	case cfg.Size < 16 || cfg.Size > wirerelay.DefaultMaxRelayContent:
		return nil, fmt.Errorf("message size must be in [16, %d]", wirerelay.DefaultMaxRelayContent)
	case cfg.Window < 1:
		return nil, errors.New("the window must be at least 1")
	case cfg.LossTimeout <= 0 || cfg.LossTimeout >= cfg.Timeout:
		return nil, errors.New("the loss timeout must be positive and less than the timeout")
	}
	deadline := time.Now().Add(cfg.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res := &CheckResult{Messages: cfg.Messages, LossTimeout: cfg.LossTimeout}
	start := time.Now()
	hostAlloc, err := cfg.API.Allocate(ctx, 1, cfg.Region)
	if err != nil {
		return nil, fmt.Errorf("allocating: %w", err)
	}
	if res.JoinCode, err = cfg.API.JoinCode(ctx, hostAlloc.AllocationID); err != nil {
		return nil, fmt.Errorf("getting a join code: %w", err)
	}
	joinAlloc, err := cfg.API.Join(ctx, res.JoinCode)
	if err != nil {
		return nil, fmt.Errorf("joining: %w", err)
	}
	res.AllocateTime = time.Since(start)
	res.HostID, res.JoinerID, res.Region = hostAlloc.AllocationID, joinAlloc.AllocationID, hostAlloc.Region

	hostCfg, err := ClientConfigFor(hostAlloc)
	if err != nil {
		return nil, err
	}
	joinCfg, err := ClientConfigFor(joinAlloc)
	if err != nil {
		return nil, err
	}
	res.Relay = hostCfg.Server
	start = time.Now()
	host, err := Dial(ctx, hostCfg)
	if err != nil {
		return nil, fmt.Errorf("binding the host: %w", err)
	}
	defer host.Close()
	joiner, err := Dial(ctx, joinCfg)
	if err != nil {
		return nil, fmt.Errorf("binding the joiner: %w", err)
	}
	defer joiner.Close()
	res.BindTime = time.Since(start)
	start = time.Now()
	hostID, err := joiner.Connect(ctx, joinAlloc.HostConnectionData)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	res.ConnectTime = time.Since(start)

	go EchoAll(ctx, host)
	sending, stop := context.WithDeadline(ctx, deadline.Add(-cfg.LossTimeout))
	defer stop()
	echo, err := Echo(sending, joiner, hostID, EchoConfig{
		Messages: cfg.Messages, Size: cfg.Size, Window: cfg.Window, LossTimeout: cfg.LossTimeout,
	})
	if err != nil {
		return nil, err
	}
	res.EchoResult = *echo
	return res, nil
}

// EchoAll sends every message c receives back to its sender, until ctx
// ends or c is closed: the host's part of an echo stream.
func EchoAll(ctx context.Context, c *Client) {
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			return
		}
		_ = c.Send(m.From, m.Content)
	}
}

// Echo sends numbered messages from joiner to host, which sends each back
// (EchoAll), keeping cfg.Window in flight, and measures their round trips.
// A message whose echo has not come within cfg.LossTimeout is lost at that
// moment and the next one takes its place, so losses neither stall the
// stream nor make it wait for more than one loss timeout at its end. When
// ctx ends it sends no more and waits for the messages in flight, each up
// to its loss timeout: it returns at most cfg.LossTimeout after ctx ends
// or the last message is sent. An error is returned only if sending
// fails or the joiner's allocation ends.
func Echo(ctx context.Context, joiner *Client, host wirerelay.AllocationID, cfg EchoConfig) (*EchoResult, error) {
	if cfg.Size < 16 || cfg.Size > wirerelay.DefaultMaxRelayContent {
		return nil, fmt.Errorf("message size must be in [16, %d]", wirerelay.DefaultMaxRelayContent)
	}
	if cfg.Window < 1 || cfg.LossTimeout <= 0 || cfg.Messages < 0 {
		return nil, errors.New("the window and the loss timeout must be positive, the messages not negative")
	}
	res := &EchoResult{}
	base := time.Now()
	msg := make([]byte, cfg.Size)
	// inFlight holds the messages sent and not yet received or lost, in
	// the order they were sent, so the first is the next to time out.
	type sent struct {
		seq uint64
		at  time.Duration
	}
	var inFlight []sent
	pending := map[uint64]bool{} // in flight, by sequence number
	lost := map[uint64]bool{}    // declared lost; a later echo is late
	var next uint64
	more := func() bool {
		return ctx.Err() == nil && (cfg.Messages == 0 || int(next) < cfg.Messages)
	}
	send := func() error {
		at := time.Since(base)
		binary.BigEndian.PutUint64(msg[0:], next)
		binary.BigEndian.PutUint64(msg[8:], uint64(at))
		if err := joiner.Send(host, msg); err != nil {
			return err
		}
		inFlight = append(inFlight, sent{next, at})
		pending[next] = true
		next++
		res.Sent++
		return nil
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	stopped := ctx.Done()
	for {
		for len(pending) < cfg.Window && more() {
			if err := send(); err != nil {
				return nil, err
			}
		}
		// Forget the head of the window while it is answered, and declare
		// it lost once its time is up.
		for len(inFlight) > 0 {
			head := inFlight[0]
			if !pending[head.seq] {
				inFlight = inFlight[1:]
				continue
			}
			if time.Since(base) < head.at+cfg.LossTimeout {
				break
			}
			delete(pending, head.seq)
			lost[head.seq] = true
			res.Lost++
			inFlight = inFlight[1:]
		}
		if len(pending) == 0 {
			if more() {
				continue
			}
			break
		}
		timer.Reset(inFlight[0].at + cfg.LossTimeout - time.Since(base))
		var m Message
		select {
		case m = <-joiner.recv:
		case <-timer.C:
			continue
		case <-stopped:
			stopped = nil // those in flight have their loss timeout still
			continue
		case <-joiner.done:
			return nil, joiner.err()
		}
		if m.From != host || len(m.Content) != cfg.Size {
			continue
		}
		seq := binary.BigEndian.Uint64(m.Content)
		switch {
		case pending[seq]:
			delete(pending, seq)
			res.Received++
			res.RoundTrips = append(res.RoundTrips, time.Since(base)-time.Duration(binary.BigEndian.Uint64(m.Content[8:])))
		case lost[seq]:
			delete(lost, seq)
			res.Late++
		}
	}
	elapsed := time.Since(base)
	slices.Sort(res.RoundTrips)
	pct := func(p float64) time.Duration {
		if len(res.RoundTrips) == 0 {
			return 0
		}
		return res.RoundTrips[min(len(res.RoundTrips)-1, int(float64(len(res.RoundTrips))*p))]
	}
	res.P50, res.P95, res.P99 = pct(0.50), pct(0.95), pct(0.99)
	res.P50ms, res.P95ms, res.P99ms = ms(res.P50), ms(res.P95), ms(res.P99)
	res.MeanThroughput = float64(res.Received) / elapsed.Seconds()
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
