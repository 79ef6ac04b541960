package caddyfreeciv

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/freeciv"
	wirefreeciv "github.com/gamegate/gamegate/wire/freeciv"
)

func init() {
	caddy.RegisterModule(new(MatchFreeciv))
	caddy.RegisterModule(new(FreecivGuard))
}

// MatchFreeciv matches a TCP connection whose first packet is a plausible
// Freeciv JOIN_REQ (a length in range, type 4 in the initial 1-byte type
// header, NUL-terminated strings within their bounds), so Freeciv can share
// a port with TLS, HTTP and other protocols.
type MatchFreeciv struct{}

// CaddyModule returns the Caddy module information.
func (*MatchFreeciv) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.freeciv",
		New: func() caddy.Module { return new(MatchFreeciv) },
	}
}

// Match looks at the bytes prefetched so far and asks for more only while
// they may still be the start of a JOIN_REQ (at most 623 bytes).
func (m *MatchFreeciv) Match(cx *layer4.Connection) (bool, error) {
	b := cx.MatchingBytes()
	ok, more := wirefreeciv.PlausibleJoinReq(b)
	switch {
	case ok:
		return true, nil
	case more:
		return false, layer4.ErrConsumedAllPrefetchedBytes
	}
	return false, nil
}

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	freeciv
func (m *MatchFreeciv) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseNoOptions(d, "freeciv matcher")
}

// FreecivGuard sits before proxy in a layer4 route and passes a Freeciv
// client's stream through unchanged while checking it: the first packet is
// a well-formed JOIN_REQ, every packet is well framed and within
// max_packet_size, compressed chunks stay within max_chunk_size and
// decompress to at most max_decompressed_size without nesting, and,
// optionally, the client sends at most packet_rate packets per second.
// Only bytes of complete, checked packets are passed on, so nothing
// malformed reaches the server; a violation closes the connection with a
// log line saying why. The server's answers pass unchanged (watched only
// for the join, after which both directions use the 2-byte packet type).
type FreecivGuard struct {
	// The guard's options: max_packet_size, max_chunk_size,
	// max_decompressed_size, packet_rate, packet_burst.
	freeciv.GuardConfig

	// Deprecated: the former name of max_packet_size, still read (with a
	// warning at provision).
	FormerMaxPacket int `json:"max_packet,omitempty"`
	// Deprecated: the former name of max_chunk_size, still read (with a
	// warning at provision).
	FormerMaxChunk int `json:"max_chunk,omitempty"`
	// Deprecated: the former name of max_decompressed_size, still read
	// (with a warning at provision).
	FormerMaxDecompressed int `json:"max_decompressed,omitempty"`

	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (*FreecivGuard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.freeciv_guard",
		New: func() caddy.Module { return new(FreecivGuard) },
	}
}

// Provision sets up the guard.
func (h *FreecivGuard) Provision(ctx caddy.Context) error {
	h.logger = sampledLogger(ctx.Logger())
	for _, r := range []struct {
		old, current   string
		oldV, currentV *int
	}{
		{"max_packet", "max_packet_size", &h.FormerMaxPacket, &h.MaxPacket},
		{"max_chunk", "max_chunk_size", &h.FormerMaxChunk, &h.MaxChunk},
		{"max_decompressed", "max_decompressed_size", &h.FormerMaxDecompressed, &h.MaxDecompressed},
	} {
		if err := caddyglue.Renamed(ctx, "freeciv_guard", r.old, r.current, r.oldV, r.currentV); err != nil {
			return err
		}
	}
	h.GuardConfig = h.GuardConfig.WithDefaults()
	return FreecivMetrics.Register(ctx.GetMetricsRegistry())
}

// Validate checks the configuration.
func (h *FreecivGuard) Validate() error { return h.GuardConfig.Validate() }

// Handle checks the connection and hands the checked stream to the next
// handler (normally proxy).
func (h *FreecivGuard) Handle(cx *layer4.Connection, next layer4.Handler) error {
	FreecivMetrics.connections.Inc()
	g, err := freeciv.NewGuard(h.GuardConfig)
	if err != nil {
		return fmt.Errorf("freeciv_guard: %w", err)
	}
	gc := &guardedConn{Conn: cx, src: cx, guard: g, logger: h.logger, rbuf: make([]byte, 32<<10)}
	// The matchers' prefetched bytes would otherwise be replayed by the
	// wrapped connection, around the guard: take them through it first.
	if pre := len(cx.MatchingBytes()); pre > 0 {
		first := make([]byte, pre)
		if _, err := io.ReadFull(cx, first); err != nil {
			return err
		}
		out, err := g.Client(first)
		if err != nil {
			gc.violation(err)
			return nil
		}
		gc.ready = out
	}
	return next.Handle(cx.Wrap(gc))
}

// sampledLogger logs at most 10 entries of one level and message a second,
// dropping the rest: a guard's warnings are per connection, and anyone can
// open connections. The violations metric still counts every one.
func sampledLogger(l *zap.Logger) *zap.Logger {
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, 10, 0)
	}))
}

// guardedConn is the client connection as the next handler sees it: reads
// return only checked bytes; writes (the server's answers) are watched for
// the join.
type guardedConn struct {
	net.Conn
	src    *layer4.Connection
	guard  *freeciv.Guard
	logger *zap.Logger
	rbuf   []byte
	ready  []byte
	err    error
}

func (c *guardedConn) Read(p []byte) (int, error) {
	for len(c.ready) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		n, err := c.src.Read(c.rbuf)
		if n > 0 {
			out, verr := c.guard.Client(c.rbuf[:n])
			if verr != nil {
				c.violation(verr)
				return 0, c.err
			}
			c.ready = out
		}
		if err != nil {
			c.err = err
		}
	}
	n := copy(p, c.ready)
	c.ready = c.ready[n:]
	return n, nil
}

func (c *guardedConn) violation(err error) {
	c.err = err
	reason := "framing"
	if v, ok := err.(*freeciv.Violation); ok {
		reason = v.Reason
	}
	FreecivMetrics.violations.WithLabelValues(reason).Inc()
	c.logger.Warn("freeciv guard closed a connection",
		zap.String("remote", c.src.RemoteAddr().String()),
		zap.String("reason", reason),
		zap.Int64("packets_checked", c.guard.Packets()),
		zap.Error(err))
	_ = c.src.Conn.Close()
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.guard.Server(p)
	return c.Conn.Write(p)
}

// CloseWrite half-closes the client connection when the server is done.
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.src.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// UnmarshalCaddyfile sets up the guard from Caddyfile tokens. Syntax:
//
//	freeciv_guard {
//		max_packet_size       <bytes>
//		max_chunk_size        <bytes>
//		max_decompressed_size <bytes>
//		packet_rate           <packets_per_second>
//		packet_burst          <packets>
//	}
func (h *FreecivGuard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseRenamedModuleBlock(d, "freeciv_guard", nil, freecivGuardFormerNames, func(opt string) error {
		var err error
		switch opt {
		case "max_packet_size":
			h.MaxPacket, err = caddyglue.ParseSize[int](d, guardRange(opt))
		case "max_chunk_size":
			h.MaxChunk, err = caddyglue.ParseSize[int](d, guardRange(opt))
		case "max_decompressed_size":
			h.MaxDecompressed, err = caddyglue.ParseSize[int](d, guardRange(opt))
		case "packet_burst":
			h.PacketBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "packet_rate":
			args := d.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return d.Errf("freeciv_guard: packet_rate takes <packets_per_second> [<burst>]")
			}
			f, ferr := caddyglue.ParseFloatArg(args[0])
			if ferr != nil || f <= 0 {
				return d.Errf("freeciv_guard: packet_rate: '%s' is not a positive number", args[0])
			}
			h.PacketRate = f
			if len(args) == 2 { // deprecated: packet_burst
				caddyglue.NoteDeprecated("freeciv_guard packet_rate <rate> <burst> → packet_burst")
				caddy.Log().Warn("deprecated Caddyfile syntax: give the burst as packet_burst", zap.String("option", "freeciv_guard packet_rate"), zap.String("file", d.File()), zap.Int("line", d.Line()))
				b, berr := caddyglue.ParseIntArg(args[1])
				if berr != nil || b < 1 {
					return d.Errf("freeciv_guard: packet_rate burst: '%s' is not a positive integer", args[1])
				}
				h.PacketBurst = b
			}
		default:
			return caddyglue.UnknownOption(d, "freeciv_guard", opt)
		}
		return err
	})
}

// guardRange is the range the guard's Config holds option opt to.
func guardRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[freeciv.GuardConfig](opt)
}

// freecivGuardFormerNames are the guard's renamed Caddyfile options.
var freecivGuardFormerNames = caddyglue.FormerNames{
	"max_packet":       "max_packet_size",
	"max_chunk":        "max_chunk_size",
	"max_decompressed": "max_decompressed_size",
}

var FreecivMetrics = newFreecivMetrics()

type freecivMetricSet struct {
	caddyglue.MetricSet
	connections prometheus.Counter
	violations  *prometheus.CounterVec
}

func newFreecivMetrics() *freecivMetricSet {
	m := &freecivMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "freeciv_guard"}}
	m.connections = m.Counter("connections_total", "Freeciv connections checked by the guard.")
	m.violations = m.CounterVec("violations_total",
		"Freeciv connections closed by the guard, by reason (framing, first_packet, rate).", "reason")
	return m
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*MatchFreeciv)(nil)
	_ layer4.ConnMatcher    = (*MatchFreeciv)(nil)
	_ caddy.Provisioner     = (*FreecivGuard)(nil)
	_ caddy.Validator       = (*FreecivGuard)(nil)
	_ caddyfile.Unmarshaler = (*FreecivGuard)(nil)
	_ layer4.NextHandler    = (*FreecivGuard)(nil)
)
