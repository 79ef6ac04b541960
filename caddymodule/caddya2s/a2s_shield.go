package caddya2s

import (
	"crypto/rand"
	"net"
	"net/netip"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/internal/duration"
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
	// The shield's options: upstream, ttl, stale_while_revalidate,
	// stale_if_error, negative_ttl, challenge_window, max_payload,
	// decompress, attempt_timeout, retries, max_packets,
	// max_response_size, rate, burst, byte_rate, byte_burst,
	// total_byte_rate, total_byte_burst, max_sources, split_layout.
	a2s.ShieldOptions

	// Deprecated: the former name of stale_while_revalidate and
	// stale_if_error together, which it sets both.
	StaleTTL duration.Duration `json:"stale_ttl,omitempty"`
	// Deprecated: the former name of attempt_timeout.
	UpstreamTimeout duration.Duration `json:"upstream_timeout,omitempty"`
	// Deprecated: the former name of max_response_size.
	FormerMaxResponse int `json:"max_response,omitempty"`

	// The shield Provision builds, embedded so that the module serves its
	// datagrams wherever it is a dgram.Protocol.
	*shieldProtocol `json:"-"`
	logger          *zap.Logger
}

type shieldProtocol = a2s.ShieldProtocol

// CaddyModule returns the Caddy module information.
func (*A2SShield) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.a2s_shield",
		New: func() caddy.Module { return new(A2SShield) },
	}
}

// Provision moves the former option names to the current ones, builds the
// shield and starts its workers.
func (h *A2SShield) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	caddyglue.WarnExposedLayer4(ctx)
	if err := caddyglue.Renamed(ctx, "a2s_shield", "stale_ttl", "stale_while_revalidate", &h.StaleTTL, &h.StaleWhileRevalidate,
		caddyglue.RenamedTo[duration.Duration]{Option: "stale_if_error", Value: &h.StaleIfError}); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "a2s_shield", "upstream_timeout", "attempt_timeout", &h.UpstreamTimeout, &h.AttemptTimeout); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "a2s_shield", "max_response", "max_response_size", &h.FormerMaxResponse, &h.MaxResponse); err != nil {
		return err
	}
	o := h.ShieldOptions
	o.Key = a2sChallengeKey
	o.Count = A2sShieldMetrics.requests.Count
	o.Sent = A2sShieldMetrics.sent
	o.Busy = A2sShieldMetrics.busy.Inc
	o.OnUpstream = A2sShieldMetrics.upstream.Inc
	o.WriteFailed = func(to netip.AddrPort, err error) {
		if ce := h.logger.Check(zap.DebugLevel, "writing A2S answer"); ce != nil {
			ce.Write(zap.Stringer("to", to), zap.Error(err))
		}
	}
	var err error
	if h.shieldProtocol, err = a2s.NewShieldProtocol(o); err != nil {
		return err
	}
	return caddyglue.RegisterDatagramMetrics(ctx, &A2sShieldMetrics.MetricSet)
}

// Cleanup stops the workers, then ends the shield's upstream queries
// (a2s.ShieldProtocol.Close): a reload or stop does not wait for the game
// server.
func (h *A2SShield) Cleanup() error {
	if h.shieldProtocol != nil {
		h.shieldProtocol.Close()
	}
	return nil
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

// Validate checks the configuration (a2s.ShieldOptions.Validate).
func (h *A2SShield) Validate() error { return h.ShieldOptions.Validate() }

// Handle serves the association's datagrams with the shield: challenges
// and cached answers at once, requests that wait for the game server on
// the shield's shared workers (see a2s.ShieldProtocol).
func (h *A2SShield) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	return caddyglue.ServeDatagrams(cx, h.shieldProtocol, "a2s_shield")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	a2s_shield <upstream> {
//		ttl                    <duration>
//		stale_while_revalidate <duration>
//		stale_if_error         <duration>
//		negative_ttl           <duration>
//		challenge_window       <duration>
//		max_payload            <bytes>
//		decompress
//		split_layout           auto|source|source_no_size|goldsrc
//		attempt_timeout        <duration>
//		retries                <count>
//		max_packets            <count>
//		max_response_size      <bytes>
//		rate                   <answers_per_second>
//		burst                  <answers>
//		byte_rate              <bytes_per_second>
//		byte_burst             <bytes>
//		total_byte_rate        <bytes_per_second>
//		total_byte_burst       <bytes>
//		max_sources            <count>
//	}
//
// stale_ttl (both stale_while_revalidate and stale_if_error) and
// upstream_timeout (attempt_timeout) and max_response
// (max_response_size) are the deprecated former names.
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
	return caddyglue.ParseRenamedBlock(d, "a2s_shield", "a2s_shield", nil, a2sShieldFormerNames, func(opt string) error {
		var err error
		switch opt {
		case "ttl":
			h.TTL, err = parseShieldDuration(d, opt)
		case "stale_while_revalidate":
			h.StaleWhileRevalidate, err = parseShieldDuration(d, opt)
		case "stale_if_error":
			h.StaleIfError, err = parseShieldDuration(d, opt)
		case "stale_ttl": // moved to both stale options when provisioned
			h.StaleTTL, err = parseShieldDuration(d, "stale_while_revalidate")
		case "negative_ttl":
			h.NegativeTTL, err = parseShieldDuration(d, opt)
		case "challenge_window":
			h.ChallengeWindow, err = parseShieldDuration(d, opt)
		case "max_payload":
			h.MaxPayload, err = caddyglue.ParseIntIn(d, shieldRange(opt))
		case "decompress":
			err = caddyglue.ParseFlag(d, &h.Decompress)
		case "split_layout":
			h.SplitLayout, err = caddyglue.ParseOneOf(d, a2s.LayoutNames...)
		case "attempt_timeout":
			h.AttemptTimeout, err = parseShieldDuration(d, opt)
		case "retries":
			h.Retries, err = caddyglue.ParseIntIn(d, shieldRange(opt))
		case "max_packets":
			h.MaxPackets, err = caddyglue.ParseIntIn(d, shieldRange(opt))
		case "max_response_size":
			h.MaxResponse, err = caddyglue.ParseIntIn(d, shieldRange(opt))
		case "rate":
			h.Rate, err = caddyglue.ParsePositiveFloat(d)
		case "burst":
			h.Burst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "byte_rate":
			h.ByteRate, err = caddyglue.ParseSize[int](d, shieldRange(opt))
		case "byte_burst":
			h.ByteBurst, err = caddyglue.ParseSize[int](d, shieldRange(opt))
		case "total_byte_rate":
			h.TotalByteRate, err = caddyglue.ParseSize[int](d, shieldRange(opt))
		case "total_byte_burst":
			h.TotalByteBurst, err = caddyglue.ParseSize[int](d, shieldRange(opt))
		case "max_sources":
			h.MaxSources, err = caddyglue.ParseIntIn(d, shieldRange(opt))
		default:
			return caddyglue.UnknownOption(d, "a2s_shield", opt)
		}
		return err
	})
}

// a2sShieldFormerNames are the shield's renamed options but stale_ttl,
// which became two (both stale options).
var a2sShieldFormerNames = caddyglue.FormerNames{"upstream_timeout": "attempt_timeout", "max_response": "max_response_size"}

// shieldRange is the range the shield's options hold option opt to.
func shieldRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[a2s.ShieldOptions](opt)
}

// parseShieldDuration reads a duration in the range the shield's options
// hold option opt to.
func parseShieldDuration(d *caddyfile.Dispenser, opt string) (duration.Duration, error) {
	return caddyglue.ParseConfigDurationIn(d, caddyglue.ConfigDurationRange[a2s.ShieldOptions](opt))
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

var a2sMatcher = caddyglue.NewDatagramMatcher("a2s", wirea2s.MaxRequest+1, wirea2s.LooksLikeRequest)

// Match reads the first datagram once (see DatagramMatcher).
func (m *MatchA2S) Match(cx *layer4.Connection) (bool, error) { return a2sMatcher.Match(cx) }

// UnmarshalCaddyfile sets up the matcher from Caddyfile tokens. Syntax:
//
//	a2s
func (m *MatchA2S) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return a2sMatcher.UnmarshalCaddyfile(d)
}

// A2SShieldProtocol serves the A2S shield (layer4.handlers.a2s_shield) on
// a gamegate UDP server: same options, parsed by the same code, and the
// same a2s.ShieldProtocol, whose readers answer challenges and cached
// answers and whose few workers wait for the game server.
type A2SShieldProtocol struct{ A2SShield }

// CaddyModule returns the Caddy module information.
func (*A2SShieldProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.a2s_shield",
		New: func() caddy.Module { return new(A2SShieldProtocol) },
	}
}

var A2sShieldMetrics = newA2SShieldMetrics()

type a2sShieldMetricSet struct {
	caddyglue.MetricSet
	requests    caddyglue.EnumCounters[a2s.Verdict]
	busy        prometheus.Counter
	upstream    prometheus.Counter
	answerBytes prometheus.Counter
}

// sent counts the bytes of an answer sent.
func (m *a2sShieldMetricSet) sent(n int) { m.answerBytes.Add(float64(n)) }

func newA2SShieldMetrics() *a2sShieldMetricSet {
	m := &a2sShieldMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "a2s_shield"}}
	m.requests = caddyglue.NewEnumCounters(&m.MetricSet, "requests_total",
		"A2S requests handled by the shield, by outcome.",
		"outcome", a2s.NumVerdicts)
	m.busy = m.Counter("requests_dropped_busy_total",
		"Validated A2S requests dropped because the queue of requests waiting for the game server was full.")
	m.upstream = m.Counter("upstream_queries_total", "Queries the shield sent to game servers.")
	m.answerBytes = m.Counter("answer_bytes_total", "Bytes of answers the shield sent to sources that passed their challenge.")
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
