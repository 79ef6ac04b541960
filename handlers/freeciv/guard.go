// Package freeciv is gamegate's Freeciv support, free of Caddy: a guard that
// checks a client's stream before it reaches a Freeciv server, and a query
// protocol that asks a server for its version and capabilities with a
// JOIN_REQ probe.
package freeciv

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/wire/freeciv"
)

// The bounds of GuardConfig's options, and the burst WithDefaults gives.
const (
	MinMaxPacket       = 4
	MaxMaxPacket       = freeciv.CompressionBorder - 1
	MinMaxChunk        = 16
	MaxMaxChunk        = 1 << 30
	DefaultPacketBurst = 100
)

// GuardConfig bounds what a client may send: the freeciv_guard handler's
// options, by their JSON and Caddyfile names.
type GuardConfig struct {
	// Largest ordinary packet, header included, in bytes, 4 to 16384.
	// Default: 4096.
	MaxPacket int `json:"max_packet_size,omitempty"`
	// Largest compressed chunk, framing included, in bytes, 16 to 2^30.
	// Default: 1048576.
	MaxChunk int `json:"max_chunk_size,omitempty"`
	// Most bytes one chunk may decompress to, 16 to 2^30. Default: 1048576.
	MaxDecompressed int `json:"max_decompressed_size,omitempty"`
	// Most packets per second a client may send. Default: 0 (no limit).
	PacketRate float64 `json:"packet_rate,omitempty"`
	// Packets a client may send at once above packet_rate. Default: 100
	// (DefaultPacketBurst, given by WithDefaults; NewGuard alone reads 0
	// as 1).
	PacketBurst int `json:"packet_burst,omitempty"`
	// Now gives the time. Default: time.Now.
	Now func() time.Time `json:"-"`
}

// WithDefaults returns c with the defaults of the options a user leaves
// out that NewGuard does not default itself.
func (c GuardConfig) WithDefaults() GuardConfig {
	if c.PacketBurst == 0 {
		c.PacketBurst = DefaultPacketBurst
	}
	return c
}

// Validate checks every option against its range; zero values (the
// defaults) pass.
func (c *GuardConfig) Validate() error {
	return bounds.First(
		bounds.Int("max_packet_size", c.MaxPacket, MinMaxPacket, MaxMaxPacket),
		bounds.Int("max_chunk_size", c.MaxChunk, MinMaxChunk, MaxMaxChunk),
		bounds.Int("max_decompressed_size", c.MaxDecompressed, MinMaxChunk, MaxMaxChunk),
		ratelimit.ValidateOptions("packet_rate", "packet_burst", c.PacketRate, c.PacketBurst, ratelimit.MaxBurst),
	)
}

// Violation is why a guard cut a client off.
type Violation struct {
	Reason string // framing, first_packet, rate
	Err    error
}

func (v *Violation) Error() string { return "freeciv guard: " + v.Reason + ": " + v.Err.Error() }
func (v *Violation) Unwrap() error { return v.Err }

// Guard checks one connection. Bytes from the client go through Client,
// which releases only the bytes of complete, well-formed frames, so nothing
// malformed reaches the server; bytes from the server go through Server,
// which watches for the JOIN_REPLY after which both directions use the
// 2-byte packet type. Client and Server may run on different goroutines.
type Guard struct {
	cfg       GuardConfig
	client    freeciv.Splitter
	pending   []byte // client bytes not yet released
	validated int    // bytes at the front of pending that are whole frames
	packets   int64
	first     bool // the first packet has been checked
	limit     ratelimit.Limit
	clock     ratelimit.Clock
	rate      ratelimit.State

	server       freeciv.Splitter
	serverMu     sync.Mutex
	serverDone   bool
	joined       atomic.Bool // the server accepted the join
	clientJoined bool        // the client side has switched
}

// NewGuard returns a guard for one connection, or an error naming a value
// of cfg it cannot use.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	if cfg.PacketRate > 0 {
		cfg.PacketBurst = max(cfg.PacketBurst, 1)
	}
	if err := ratelimit.ValidateNamed("packet_rate", "packet_burst", cfg.PacketRate, cfg.PacketBurst); err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg, clock: ratelimit.NewClock(cfg.Now)}
	g.limit, _ = ratelimit.NewLimit(cfg.PacketRate, cfg.PacketBurst)
	g.client = freeciv.Splitter{MaxPacket: cfg.MaxPacket, MaxChunk: cfg.MaxChunk, MaxDecompressed: cfg.MaxDecompressed}
	// The server's own traffic is trusted for size: it is only watched for
	// the join, with the codec's default limits.
	g.server = freeciv.Splitter{SwitchOnJoin: true}
	return g, nil
}

// Packets is the number of client packets checked.
func (g *Guard) Packets() int64 { return g.packets }

// Joined reports whether the server has accepted the client's join.
func (g *Guard) Joined() bool { return g.joined.Load() }

// Client takes bytes read from the client and returns the bytes that may be
// passed to the server now (aliasing the guard's buffer until the next
// call), or a *Violation, after which the connection must be closed.
func (g *Guard) Client(p []byte) ([]byte, error) {
	// Drop what the previous call released.
	if g.validated > 0 {
		n := copy(g.pending, g.pending[g.validated:])
		g.pending = g.pending[:n]
		g.validated = 0
	}
	for len(p) > 0 {
		n, werr := g.client.Write(p)
		g.pending = append(g.pending, p[:n]...)
		p = p[n:]
		if err := g.drain(); err != nil {
			return nil, err
		}
		if werr != nil && n == 0 {
			return nil, &Violation{Reason: "framing", Err: werr}
		}
	}
	g.validated = len(g.pending) - g.client.Buffered()
	return g.pending[:g.validated], nil
}

// drain checks every complete frame the client splitter holds.
func (g *Guard) drain() error {
	for {
		if !g.clientJoined && g.joined.Load() {
			// The server accepted the join: the client's next packets use
			// the 2-byte type.
			if err := g.client.SetTypeWidth(2); err != nil {
				return &Violation{Reason: "framing", Err: err}
			}
			g.clientJoined = true
		}
		f, err := g.client.Next()
		if errors.Is(err, freeciv.ErrNeedMore) {
			return nil
		}
		if err != nil {
			return &Violation{Reason: "framing", Err: err}
		}
		g.packets++
		if !g.first {
			g.first = true
			var req freeciv.JoinReq
			if f.Type != freeciv.PacketServerJoinReq || f.FromChunk {
				return &Violation{Reason: "first_packet", Err: fmt.Errorf("packet type %d, want a JOIN_REQ (4)", f.Type)}
			}
			if err := req.Decode(f.Packet); err != nil {
				return &Violation{Reason: "first_packet", Err: err}
			}
		}
		if !g.limit.Unlimited() && !g.limit.Allow(&g.rate, g.clock.Now()) {
			return &Violation{Reason: "rate", Err: fmt.Errorf("more than %g packets per second", g.cfg.PacketRate)}
		}
	}
}

// Server watches bytes sent by the server until it has accepted or refused
// the join; after that it costs nothing.
func (g *Guard) Server(p []byte) {
	g.serverMu.Lock()
	defer g.serverMu.Unlock()
	for len(p) > 0 && !g.serverDone {
		n, werr := g.server.Write(p)
		p = p[n:]
		for !g.serverDone {
			f, err := g.server.Next()
			if errors.Is(err, freeciv.ErrNeedMore) {
				break
			}
			if err != nil {
				g.serverDone = true // cannot follow the server: stop watching
				break
			}
			if f.Type == freeciv.PacketServerJoinReply {
				if g.server.TypeWidth() == 2 {
					g.joined.Store(true)
				}
				g.serverDone = true
			}
		}
		if werr != nil && n == 0 {
			g.serverDone = true
		}
	}
	if g.serverDone {
		g.server.Reset()
	}
}
