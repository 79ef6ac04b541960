package caddymodule

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/internal/netaddr"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

func init() {
	caddy.RegisterModule(new(A2SShield))
	caddy.RegisterModule(new(MatchA2S))
	caddy.RegisterModule(new(A2SShieldProtocol))
}

// A2SShield answers Valve server queries (A2S_INFO, A2S_PLAYER, A2S_RULES)
// for a game server from a cache, on a caddy-l4 UDP listener, so the game
// server sees at most one query of each kind per ttl however many clients
// ask. Every request must carry a challenge the shield gave its source
// address (made from the address and the time, so it costs no memory): a
// spoofed source only ever gets the 9-byte S2C_CHALLENGE, never more than
// it sent. A source that passed its challenge gets answers within limits
// per source (answers and bytes a second) and for all sources together.
// Long answers are split as the Source layout says, and an answer the game
// server compressed is served compressed.
type A2SShield struct {
	// The game server's query address, host:port. Required.
	Upstream string `json:"upstream,omitempty"`
	// How long an answer is reused, from 100ms to 24h. Default: 5s.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// How long after ttl an answer is still served while it is refreshed,
	// and when the game server does not answer, at most 24h. Default: 30s.
	StaleTTL caddy.Duration `json:"stale_ttl,omitempty"`
	// How long a failed upstream query is remembered before the next try.
	// At most 24h. Default: 1s.
	NegativeTTL caddy.Duration `json:"negative_ttl,omitempty"`
	// How long a challenge stays valid: between one and two windows. From
	// 1s to 1h. Default: 30s.
	ChallengeWindow caddy.Duration `json:"challenge_window,omitempty"`
	// Fragment payload of split answers, in bytes (Source servers use
	// 1248). Default: 1248.
	MaxPayload int `json:"max_payload,omitempty"`
	// Serve answers the game server compressed uncompressed. Default:
	// false (served compressed, as they came).
	Decompress bool `json:"decompress,omitempty"`
	// Layout of split answers sent: auto (the game server's own), source,
	// source_no_size or goldsrc. It is also the layout expected from the
	// game server. Default: auto.
	SplitLayout string `json:"split_layout,omitempty"`
	// Time one upstream attempt waits, challenge included, at most 1h.
	// Default: 1s.
	UpstreamTimeout caddy.Duration `json:"upstream_timeout,omitempty"`
	// Upstream attempts after the first, -1 (none) to 10. Default: 1.
	Retries int `json:"retries,omitempty"`
	// Most fragments an upstream answer may have. Default: 64.
	MaxPackets int `json:"max_packets,omitempty"`
	// Largest upstream answer accepted, in bytes. Default: 131072.
	MaxResponse int `json:"max_response,omitempty"`
	// Answers a second one source (an IPv4 address or an IPv6 /64, any
	// port) is sent, past its challenge. Default: 10.
	Rate float64 `json:"rate,omitempty"`
	// Answers one source is sent at once. Default: 20.
	Burst int `json:"burst,omitempty"`
	// Answer bytes a second one source is sent. Default: 16384 (16KiB).
	ByteRate int `json:"byte_rate,omitempty"`
	// Answer bytes one source is sent at once. An answer larger than this
	// is sent only to a source that has had nothing for a while, and the
	// source then waits until the excess is paid at byte_rate. Default:
	// 65536 (64KiB).
	ByteBurst int `json:"byte_burst,omitempty"`
	// Answer bytes a second sent to all sources together. Default:
	// 2097152 (2MiB).
	TotalByteRate int `json:"total_byte_rate,omitempty"`
	// Answer bytes sent to all sources together at once. Default: one
	// second of total_byte_rate.
	TotalByteBurst int `json:"total_byte_burst,omitempty"`
	// Most sources whose limits are held at once; while the slots a new
	// source may take are all held by sources within their limits' time,
	// it is not answered. Default: 8192.
	MaxSources int `json:"max_sources,omitempty"`

	shield *a2s.Shield
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (*A2SShield) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.a2s_shield",
		New: func() caddy.Module { return new(A2SShield) },
	}
}

// Provision builds the shield.
func (h *A2SShield) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	warnExposedLayer4(ctx)
	if err := h.Validate(); err != nil {
		return err
	}
	shield, err := newA2SShield(h)
	if err != nil {
		return err
	}
	h.shield = shield
	return a2sShieldMetrics.register(ctx.GetMetricsRegistry())
}

// Cleanup ends the shield's upstream queries. They are shared by every
// request asking, so no request's end cancels them: without this, those of
// a configuration being unloaded would run on for every attempt's
// upstream_timeout.
func (h *A2SShield) Cleanup() error {
	if h.shield != nil {
		h.shield.Close()
	}
	return nil
}

// newA2SShield builds the Caddy-free shield from a validated configuration.
func newA2SShield(h *A2SShield) (*a2s.Shield, error) {
	ttl, stale, negative := time.Duration(h.TTL), time.Duration(h.StaleTTL), time.Duration(h.NegativeTTL)
	if ttl == 0 {
		ttl = 5 * time.Second
	}
	if stale == 0 {
		stale = 30 * time.Second
	}
	if negative == 0 {
		negative = time.Second
	}
	return a2s.NewShield(a2s.ShieldConfig{
		Upstream: h.Upstream,
		Client:   newA2SClient(h.UpstreamTimeout, h.Retries, h.SplitLayout, h.MaxPackets, h.MaxResponse),
		Cache: cache.Policy{TTL: ttl, StaleWhileRevalidate: stale, StaleIfError: stale, NegativeTTL: negative,
			LoadTimeout: h.loadTimeout()},
		ChallengeWindow: time.Duration(h.ChallengeWindow),
		Key:             a2sChallengeKey,
		Layout:          splitLayouts[h.SplitLayout],
		MaxPayload:      h.MaxPayload,
		Decompress:      h.Decompress,
		Limits: a2s.Limits{Rate: h.Rate, Burst: h.Burst, ByteRate: h.ByteRate, ByteBurst: h.ByteBurst,
			TotalByteRate: h.TotalByteRate, TotalByteBurst: h.TotalByteBurst, MaxSources: h.MaxSources},
		OnUpstream: a2sShieldMetrics.upstream.Inc,
	})
}

// loadTimeout bounds one upstream query, every attempt and a second: how
// long an answer may be waited for.
func (h *A2SShield) loadTimeout() time.Duration {
	timeout := time.Duration(h.UpstreamTimeout)
	if timeout == 0 {
		timeout = time.Second
	}
	attempts := 2
	if h.Retries != 0 {
		attempts = max(0, h.Retries) + 1
	}
	return time.Duration(attempts)*timeout + time.Second
}

// answer waits, at most loadTimeout, for the answer to a validated request
// of type typ, counts the outcome, and sends the answer's datagrams to to
// with write, logging a failed write at debug level. The layer4 handler's
// per-client goroutine and the app protocol's workers both answer with it.
func (h *A2SShield) answer(ctx context.Context, typ wirea2s.Type, to netip.AddrPort, write func([]byte) error) {
	ctx, cancel := context.WithTimeout(ctx, h.loadTimeout())
	ds := h.shield.Serve(ctx, typ)
	cancel()
	if ds == nil {
		a2sShieldMetrics.requests.count(a2s.DroppedNoAnswer)
		return
	}
	if v := h.shield.Admit(to, ds); v != a2s.Answered {
		a2sShieldMetrics.requests.count(v)
		return
	}
	a2sShieldMetrics.answered(ds)
	for _, d := range ds {
		if err := write(d); err != nil {
			if ce := h.logger.Check(zap.DebugLevel, "writing A2S answer"); ce != nil {
				ce.Write(zap.Stringer("to", to), zap.Error(err))
			}
		}
	}
}

// a2sChallengeKey is the process's challenge secret, the same for every
// shield and across configuration reloads, so a challenge given before a
// reload is still good after it.
var a2sChallengeKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("a2s_shield: no randomness for the challenge key: " + err.Error())
	}
	return k
}()

// Validate checks the configuration.
func (h *A2SShield) Validate() error {
	if h.Upstream == "" {
		return errors.New("a2s_shield: upstream is required")
	}
	if _, _, err := net.SplitHostPort(h.Upstream); err != nil {
		return fmt.Errorf("a2s_shield: upstream %q is not host:port", h.Upstream)
	}
	c := newChecker("a2s_shield")
	c.durationIn("ttl", h.TTL, cacheTTLRange)
	c.durationIn("stale_ttl", h.StaleTTL, ttlRange)
	c.durationIn("negative_ttl", h.NegativeTTL, ttlRange)
	c.durationIn("challenge_window", h.ChallengeWindow, challengeWindowRange)
	if c.err != nil {
		return c.err
	}
	if h.MaxPayload != 0 && (h.MaxPayload < 200 || h.MaxPayload > a2s.MaxSingle) {
		return fmt.Errorf("a2s_shield: max_payload must be in [200, %d]", a2s.MaxSingle)
	}
	c.rate("rate", "burst", h.Rate, int64(h.Burst))
	c.optIn("byte_rate", int64(h.ByteRate), a2sByteRange)
	c.optIn("byte_burst", int64(h.ByteBurst), a2sByteRange)
	c.optIn("total_byte_rate", int64(h.TotalByteRate), a2sByteRange)
	c.optIn("total_byte_burst", int64(h.TotalByteBurst), a2sByteRange)
	c.optIn("max_sources", int64(h.MaxSources), a2sMaxSourcesRange)
	if c.err != nil {
		return c.err
	}
	return validateA2SClient("a2s_shield", "upstream_timeout", h.UpstreamTimeout, h.Retries, h.SplitLayout, h.MaxPackets, h.MaxResponse)
}

// Ranges of the shield's limits: byte rates and bursts, and the table of
// sources (a 1<<20 table takes 34 MB).
var (
	a2sByteRange       = intRange{1, 1 << 30}
	a2sMaxSourcesRange = intRange{1, 1 << 20}
)

// a2sQueueLen is how many validated requests of one client may wait for the
// cache; more are dropped, so the read loop never blocks.
const a2sQueueLen = 4

// Handle answers the requests of one client address until the association
// ends. Challenges are answered at once; answers that may wait for the game
// server are sent from a goroutine, so the shared socket keeps being read.
func (h *A2SShield) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	pc, err := packetConnOf(cx, "a2s_shield")
	if err != nil {
		return err
	}
	remote := cx.RemoteAddr()
	src := netaddr.AddrPortOf(remote)
	queue := make(chan wirea2s.Type, a2sQueueLen)
	done := make(chan struct{})
	go func() {
		defer close(done)
		write := func(d []byte) error {
			_, err := pc.WriteTo(d, remote)
			return err
		}
		for typ := range queue {
			h.answer(context.Background(), typ, src, write)
		}
	}()
	defer func() { close(queue); <-done }()
	reply := make([]byte, 0, wirea2s.ChallengeLen)
	drop := func() { a2sShieldMetrics.requests.count(a2s.DroppedMalformed) }
	return readDatagrams(cx, drop, func(datagram []byte) {
		out, typ, serve, v := h.shield.Classify(src, datagram, reply[:0])
		if !serve {
			a2sShieldMetrics.requests.count(v)
			if len(out) > 0 {
				_, _ = pc.WriteTo(out, remote)
			}
			return
		}
		select {
		case queue <- typ:
		default:
			a2sShieldMetrics.busy.Inc()
		}
	})
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	a2s_shield <upstream> {
//		ttl              <duration>
//		stale_ttl        <duration>
//		negative_ttl     <duration>
//		challenge_window <duration>
//		max_payload      <bytes>
//		decompress
//		split_layout     auto|source|source_no_size|goldsrc
//		upstream_timeout <duration>
//		retries          <count>
//		max_packets      <count>
//		max_response     <bytes>
//		rate             <answers_per_second>
//		burst            <answers>
//		byte_rate        <bytes_per_second>
//		byte_burst       <bytes>
//		total_byte_rate  <bytes_per_second>
//		total_byte_burst <bytes>
//		max_sources      <count>
//	}
func (h *A2SShield) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the handler name
	if !d.NextArg() {
		return d.Errf("a2s_shield: the upstream address is required")
	}
	h.Upstream = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	if _, _, err := net.SplitHostPort(h.Upstream); err != nil {
		return d.Errf("a2s_shield: upstream '%s' is not host:port", h.Upstream)
	}
	return parseBlock(d, "a2s_shield", nil, func(opt string) error {
		var err error
		switch opt {
		case "ttl":
			h.TTL, err = parseDurationIn(d, cacheTTLRange)
		case "stale_ttl":
			h.StaleTTL, err = parseDurationIn(d, ttlRange)
		case "negative_ttl":
			h.NegativeTTL, err = parseDurationIn(d, ttlRange)
		case "challenge_window":
			h.ChallengeWindow, err = parseDurationIn(d, challengeWindowRange)
		case "max_payload":
			h.MaxPayload, err = parseIntRange(d, 200, a2s.MaxSingle)
		case "decompress":
			if d.NextArg() {
				return d.ArgErr()
			}
			h.Decompress = true
		case "split_layout":
			h.SplitLayout, err = parseOneOf(d, "auto", "source", "source_no_size", "goldsrc")
		case "upstream_timeout":
			h.UpstreamTimeout, err = parseDurationIn(d, timeoutRange)
		case "retries":
			h.Retries, err = parseIntRange(d, -1, 10)
		case "max_packets":
			h.MaxPackets, err = parseIntRange(d, a2sMinPackets, wirea2s.MaxSourcePackets)
		case "max_response":
			h.MaxResponse, err = parseIntRange(d, a2sMinResponse, a2sMaxResponse)
		case "rate":
			h.Rate, err = parsePositiveFloat(d)
		case "burst":
			h.Burst, err = parseIntIn(d, burstRange)
		case "byte_rate":
			h.ByteRate, err = parseSize[int](d, a2sByteRange)
		case "byte_burst":
			h.ByteBurst, err = parseSize[int](d, a2sByteRange)
		case "total_byte_rate":
			h.TotalByteRate, err = parseSize[int](d, a2sByteRange)
		case "total_byte_burst":
			h.TotalByteBurst, err = parseSize[int](d, a2sByteRange)
		case "max_sources":
			h.MaxSources, err = parseIntIn(d, a2sMaxSourcesRange)
		default:
			return unknownOption(d, "a2s_shield", opt)
		}
		return err
	})
}

// MatchA2S matches a UDP association whose first datagram is an A2S
// request (A2S_INFO, A2S_PLAYER or A2S_RULES), so the shield can share a
// port with other protocols.
type MatchA2S struct{}

// CaddyModule returns the Caddy module information.
func (*MatchA2S) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.matchers.a2s",
		New: func() caddy.Module { return new(MatchA2S) },
	}
}

// Match reads the first datagram once.
func (m *MatchA2S) Match(cx *layer4.Connection) (bool, error) {
	if _, ok := cx.Conn.(net.PacketConn); !ok {
		return false, nil
	}
	var buf [wirea2s.MaxRequest + 1]byte
	n, err := cx.Read(buf[:])
	if err != nil {
		return false, err // ErrConsumedAllPrefetchedBytes: caddy-l4 reads the datagram first
	}
	return matchesA2S(buf[:n]), nil
}

// matchesA2S reports whether a datagram looks like an A2S request.
func matchesA2S(datagram []byte) bool { return wirea2s.LooksLikeRequest(datagram) }

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	a2s
func (m *MatchA2S) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseNoOptions(d, "a2s matcher")
}

// A2SShieldProtocol serves the A2S shield (layer4.handlers.a2s_shield) on
// a gamegate UDP server: same options, parsed by the same code. Each
// datagram is answered on the reader that read it: a challenge, or the
// cached answer. Only a request from a source that passed its challenge
// while nothing is cached yet waits for the game server, in a bounded
// queue served by a few workers; a request that finds the queue full is
// dropped (gamegate_a2s_shield_requests_dropped_busy_total) and the
// client asks again. Nothing is kept per source but its answer limits, in
// a table of fixed size: unlike the layer4 handler on caddy-l4, a flood
// from many (spoofed) sources costs no goroutine and no memory.
type A2SShieldProtocol struct {
	A2SShield

	workers dgram.Workers[a2sJob]
}

// a2sJob is a validated request waiting for the game server's answer.
type a2sJob struct {
	conn *dgram.Conn
	src  netip.AddrPort
	typ  wirea2s.Type
}

const (
	a2sWorkers  = 2  // answers awaited at once (they share the upstream queries)
	a2sQueueCap = 64 // validated requests waiting, from all sources
)

// CaddyModule returns the Caddy module information.
func (*A2SShieldProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.a2s_shield",
		New: func() caddy.Module { return new(A2SShieldProtocol) },
	}
}

// Provision builds the shield and starts the workers.
func (p *A2SShieldProtocol) Provision(ctx caddy.Context) error {
	if err := p.A2SShield.Provision(ctx); err != nil {
		return err
	}
	p.workers.Start(a2sWorkers, a2sQueueCap, p.serve, func(a2sJob) {
		a2sShieldMetrics.requests.count(a2s.DroppedNoAnswer)
	})
	return nil
}

// Cleanup stops the workers, then ends the upstream queries: requests
// waiting for the game server are dropped, so a reload or stop does not
// wait for it, and the upstream queries end with the configuration. In
// that order, so that no worker takes a query's end for an answer.
func (p *A2SShieldProtocol) Cleanup() error {
	p.workers.Close()
	return p.A2SShield.Cleanup()
}

// Match reports whether the datagram is an A2S request.
func (p *A2SShieldProtocol) Match(datagram []byte) bool { return matchesA2S(datagram) }

// ServeDatagram answers one request: a challenge, the cached answer, or,
// when nothing is cached yet, a place in the workers' queue.
func (p *A2SShieldProtocol) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	out, typ, serve, v := p.shield.Classify(src, datagram, w.Buffer(wirea2s.ChallengeLen))
	if !serve {
		a2sShieldMetrics.requests.count(v)
		if len(out) > 0 {
			w.WriteTo(out, src)
		}
		return
	}
	ds, pending := p.shield.ServeCached(typ)
	switch {
	case ds != nil:
		if v := p.shield.Admit(src, ds); v != a2s.Answered {
			a2sShieldMetrics.requests.count(v)
			return
		}
		a2sShieldMetrics.answered(ds)
		for _, d := range ds {
			w.WriteTo(d, src)
		}
	case !pending:
		a2sShieldMetrics.requests.count(a2s.DroppedNoAnswer)
	default:
		if !p.workers.Offer(a2sJob{conn: w.Conn(), src: src, typ: typ}) {
			a2sShieldMetrics.busy.Inc()
		}
	}
}

func (p *A2SShieldProtocol) serve(ctx context.Context, j a2sJob) {
	p.answer(ctx, j.typ, j.src, func(d []byte) error { return j.conn.WriteTo(d, j.src) })
}

var a2sShieldMetrics = newA2SShieldMetrics()

type a2sShieldMetricSet struct {
	metricSet
	requests    enumCounters[a2s.Verdict]
	busy        prometheus.Counter
	upstream    prometheus.Counter
	answerBytes prometheus.Counter
}

// answered counts an answer sent.
func (m *a2sShieldMetricSet) answered(ds [][]byte) {
	m.requests.count(a2s.Answered)
	n := 0
	for _, d := range ds {
		n += len(d)
	}
	m.answerBytes.Add(float64(n))
}

func newA2SShieldMetrics() *a2sShieldMetricSet {
	m := &a2sShieldMetricSet{metricSet: metricSet{subsystem: "a2s_shield"}}
	m.requests = newEnumCounters(&m.metricSet, "requests_total",
		"A2S requests handled by the shield, by outcome.",
		"outcome", a2s.NumVerdicts)
	m.busy = m.counter("requests_dropped_busy_total",
		"A2S requests dropped because the client already had requests waiting for the game server.")
	m.upstream = m.counter("upstream_queries_total", "Queries the shield sent to game servers.")
	m.answerBytes = m.counter("answer_bytes_total", "Bytes of answers the shield sent to sources that passed their challenge.")
	return m
}

// Interface guards
var (
	_ caddy.Provisioner     = (*A2SShield)(nil)
	_ caddy.Validator       = (*A2SShield)(nil)
	_ caddy.CleanerUpper    = (*A2SShield)(nil)
	_ caddyfile.Unmarshaler = (*A2SShield)(nil)
	_ layer4.NextHandler    = (*A2SShield)(nil)
	_ caddyfile.Unmarshaler = (*MatchA2S)(nil)
	_ layer4.ConnMatcher    = (*MatchA2S)(nil)
	_ dgram.Protocol        = (*A2SShieldProtocol)(nil)
	_ caddy.Provisioner     = (*A2SShieldProtocol)(nil)
	_ caddy.Validator       = (*A2SShieldProtocol)(nil)
	_ caddy.CleanerUpper    = (*A2SShieldProtocol)(nil)
	_ caddyfile.Unmarshaler = (*A2SShieldProtocol)(nil)
)
