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
	Messages int           // round trips measured; default 100
	Size     int           // content bytes per message (≥ 16); default 64
	Window   int           // messages in flight; default 8
	Timeout  time.Duration // for the whole check; default 30s
}

// CheckResult is what a relay check measured.
type CheckResult struct {
	Relay          string          `json:"relay"`
	Region         string          `json:"region"`
	HostID         string          `json:"host_allocation"`
	JoinerID       string          `json:"joiner_allocation"`
	JoinCode       string          `json:"join_code"`
	AllocateTime   time.Duration   `json:"allocate_ns"`
	BindTime       time.Duration   `json:"bind_ns"`
	ConnectTime    time.Duration   `json:"connect_ns"`
	Sent           int             `json:"sent"`
	Received       int             `json:"received"`
	RoundTrips     []time.Duration `json:"-"`
	P50, P95, P99  time.Duration   `json:"-"`
	P50ms          float64         `json:"rtt_p50_ms"`
	P95ms          float64         `json:"rtt_p95_ms"`
	P99ms          float64         `json:"rtt_p99_ms"`
	MeanThroughput float64         `json:"round_trips_per_second"`
}

// Check runs a relay check the way two game clients would use the relay:
// the host allocates and publishes a join code, the joiner joins with it,
// both bind, the joiner connects, and the joiner's messages are echoed by
// the host back through the relay.
func Check(ctx context.Context, cfg CheckConfig) (*CheckResult, error) {
	if cfg.Messages == 0 {
		cfg.Messages = 100
	}
	if cfg.Size == 0 {
		cfg.Size = 64
	}
	if cfg.Window == 0 {
		cfg.Window = 8
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Size < 16 || cfg.Size > wirerelay.DefaultMaxRelayContent {
		return nil, fmt.Errorf("message size must be in [16, %d]", wirerelay.DefaultMaxRelayContent)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res := &CheckResult{}
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

	// The host echoes whatever reaches it.
	go func() {
		for {
			m, err := host.Receive(ctx)
			if err != nil {
				return
			}
			_ = host.Send(m.From, m.Content)
		}
	}()
	base := time.Now()
	msg := make([]byte, cfg.Size)
	send := func(seq int) error {
		binary.BigEndian.PutUint64(msg[0:], uint64(seq))
		binary.BigEndian.PutUint64(msg[8:], uint64(time.Since(base)))
		res.Sent++
		return joiner.Send(hostID, msg)
	}
	next := 0
	for ; next < min(cfg.Window, cfg.Messages); next++ {
		if err := send(next); err != nil {
			return nil, err
		}
	}
	seen := make([]bool, cfg.Messages)
	for res.Received < cfg.Messages {
		m, err := joiner.Receive(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				break // what is still missing is lost
			}
			return nil, err
		}
		if len(m.Content) != cfg.Size {
			continue
		}
		seq := int(binary.BigEndian.Uint64(m.Content))
		if seq < 0 || seq >= cfg.Messages || seen[seq] {
			continue
		}
		seen[seq] = true
		res.Received++
		res.RoundTrips = append(res.RoundTrips, time.Since(base)-time.Duration(binary.BigEndian.Uint64(m.Content[8:])))
		if next < cfg.Messages {
			if err := send(next); err != nil {
				return nil, err
			}
			next++
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
