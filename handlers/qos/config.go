package qos

import (
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// Defaults of Config, and the bounds Validate checks.
const (
	DefaultRate       = 10.0
	DefaultBurst      = 40
	DefaultBanUnits   = 1
	DefaultMaxSources = 100_000
	DefaultSourceKey  = SourceKeyIP
	// DefaultClientIPv6Prefix is the IPv6 prefix one source holds, in
	// bits: the block one subscriber normally gets.
	DefaultClientIPv6Prefix = clientaddr.DefaultIPv6Prefix

	MaxBanDuration = 24 * time.Hour
	MaxMaxSources  = 1 << 30
	// MaxBanUnits and MaxBackoffUnits are the longest ban and voluntary
	// back-off a response can announce: its flow-control nibble holds 0
	// to 7 units, and a ban adds one.
	MaxBanUnits     = 8
	MaxBackoffUnits = 7
)

// What a source is (Config.SourceKey).
const (
	// SourceKeyIP: an IPv4 address, or an IPv6 prefix of
	// ClientIPv6Prefix bits, whatever the port.
	SourceKeyIP = "ip"
	// SourceKeyIPPort: an address and a port.
	SourceKeyIPPort = "ip_port"
)

// Config is the behaviour of a QoS echo service: the qos handler's
// options, by their JSON and Caddyfile names. Zero values mean the
// defaults.
type Config struct {
	// Sustained requests per second one source may send. Default: 10.
	Rate float64 `json:"rate,omitempty"`
	// Requests one source may send at once before the rate applies; a QoS
	// check sends 5 to 20 in a burst. Default: 40.
	Burst int `json:"burst,omitempty"`
	// The ban announced to a source that goes over its rate or is turned away
	// for capacity, in protocol units of 2 minutes (1-8). Default: 1.
	BanUnits int `json:"ban_units,omitempty"`
	// How long a banned source is ignored. Clients stay away for the
	// announced ban plus a margin whatever this says, so it only matters for
	// clients that do not honour the ban. Default: ban_units × 2 minutes.
	BanDuration duration.Duration `json:"ban_duration,omitempty"`
	// When 1-7, a source that has spent more than half of its burst is asked
	// to back off voluntarily for this many 2-minute units, before it is
	// banned. Default: 0 (never ask).
	BackoffUnits int `json:"backoff_units,omitempty"`
	// Requests per second answered across all sources. Past it, the source
	// whose request finds the budget empty is banned: which sources are
	// turned away is random, weighted by how much each sends. Default: 0 (no
	// global budget).
	Capacity float64 `json:"capacity,omitempty"`
	// Requests beyond the steady capacity that may be answered at once.
	// Default: one second of capacity, rounded up.
	CapacityBurst int `json:"capacity_burst,omitempty"`
	// The most sources whose rate and ban state is remembered; past it the
	// source seen least recently is forgotten. Bounds memory under a flood
	// from many addresses. Default: 100000.
	MaxSources int `json:"max_sources,omitempty"`
	// What a source is: "ip" (an IPv4 address or an IPv6 prefix of
	// client_ipv6_prefix bits, whatever the port) or "ip_port" (address and
	// port). Default: ip.
	SourceKey string `json:"source_key,omitempty"`
	// Prefix length, in bits, of the IPv6 addresses one source holds with
	// source_key ip: the addresses of one prefix share their rate and ban
	// state (32-128). Default: 64.
	ClientIPv6Prefix int `json:"client_ipv6_prefix,omitempty"`
	// Game titles to answer; requests with other titles are dropped.
	// Default: every title.
	Titles []string `json:"titles,omitempty"`
	// Handlers with the same name (and max_sources and source_key) share
	// their rate and ban state, and a reloaded configuration takes the state
	// over from the one it replaces (Tables). Default: the listener's own
	// state: in the gamegate app, that of the server's listen addresses; in
	// a layer4 route, that of the local address each association arrived
	// at.
	Name string `json:"name,omitempty"`

	// ProbeKey, when set, is the key of health probes (see probe.go): a
	// valid probe is answered whatever the state of its source, and
	// changes none. Default: none (probes are ordinary requests).
	ProbeKey []byte `json:"-"`
	// Now is the wall clock probes' times are checked against. Default:
	// time.Now.
	Now func() time.Time `json:"-"`
	// Count returns the function that receives the verdict of each
	// datagram served on listener (metrics, by listener), once for each
	// listener a Service serves on. Default: none.
	Count func(listener string) func(Verdict) `json:"-"`
	// Logger receives a debug message for each source banned. Default:
	// none.
	Logger *zap.Logger `json:"-"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	def(&c.Burst, DefaultBurst)
	def(&c.BanUnits, DefaultBanUnits)
	if c.BanDuration == 0 {
		c.BanDuration = duration.Duration(time.Duration(c.BanUnits) * wireqos.Unit)
	}
	if c.Capacity > 0 {
		def(&c.CapacityBurst, ratelimit.DefaultBurst(c.Capacity))
	}
	def(&c.MaxSources, DefaultMaxSources)
	if c.SourceKey == "" {
		c.SourceKey = DefaultSourceKey
	}
	def(&c.ClientIPv6Prefix, DefaultClientIPv6Prefix)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Count == nil {
		c.Count = func(string) func(Verdict) { return func(Verdict) {} }
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Validate checks every option's range; zero values (the defaults) pass.
func (c Config) Validate() error {
	var v bounds.Check
	d := c.WithDefaults()
	// A rate and its burst: each in range as given, then together as they
	// will run, defaults included (ValidateNamed).
	rate := func(rateName, burstName string, r float64, burst int) {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			v.Failf("%s must be a positive number of requests per second, not %v", rateName, r)
			return
		}
		v.Int(burstName, burst, 1, ratelimit.MaxBurst)
	}
	rate("rate", "burst", c.Rate, c.Burst)
	if v.Err() == nil {
		v.Add(ratelimit.ValidateNamed("rate", "burst", d.Rate, d.Burst))
	}
	v.Int("ban_units", c.BanUnits, 1, MaxBanUnits)
	v.Duration("ban_duration", c.BanDuration.Std(), 0, MaxBanDuration)
	v.Int("backoff_units", c.BackoffUnits, 0, MaxBackoffUnits)
	rate("capacity", "capacity_burst", c.Capacity, c.CapacityBurst)
	if v.Err() == nil {
		v.Add(ratelimit.ValidateNamed("capacity", "capacity_burst", d.Capacity, d.CapacityBurst))
	}
	v.Int("max_sources", c.MaxSources, 1, MaxMaxSources)
	switch c.SourceKey {
	case "", SourceKeyIP, SourceKeyIPPort:
	default:
		v.Failf("source_key must be one of %s, %s, not %q", SourceKeyIP, SourceKeyIPPort, c.SourceKey)
	}
	if err := clientaddr.ValidateIPv6Prefix("client_ipv6_prefix", c.ClientIPv6Prefix); err != nil {
		v.Add(err)
	} else if c.ClientIPv6Prefix != 0 && c.SourceKey == SourceKeyIPPort {
		v.Failf("client_ipv6_prefix applies to source_key ip: with ip_port a source is one address and port")
	}
	for _, t := range c.Titles {
		if t == "" || len(t) > wireqos.MaxTitle {
			v.Failf("titles must be 1 to %d bytes long, not %q", wireqos.MaxTitle, t)
		}
	}
	return v.Err()
}
