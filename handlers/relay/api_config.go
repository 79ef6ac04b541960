package relay

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Bounds APIConfig.Validate checks (the lower bound of a count is 1; 0 is
// the default).
const (
	MaxAPIMaxConnections = math.MaxUint16
	MaxMaxAllocations    = 1_000_000
	MaxAPIMaxBody        = 16 << 20
	MinMaxClients        = 16
	MaxMaxClients        = 1_000_000
	MaxAPIBurst          = 1 << 30
	// DefaultRegion is the region offered when none is configured.
	DefaultRegion = "default"
)

// APIOptions are the relay_allocations handler's options that are the
// API's, by their JSON and Caddyfile names. Zero values mean the
// defaults.
type APIOptions struct {
	// The largest maxConnections of an allocation, at most 65535.
	// Default: 100.
	MaxConnections int `json:"max_connections,omitempty"`
	// How long an allocation may first be bound on the relay, and be given
	// join codes. Default: 1h.
	AllocationTTL duration.Duration `json:"allocation_ttl,omitempty"`
	// How long a join code is valid. Default: 15m.
	JoinCodeTTL duration.Duration `json:"join_code_ttl,omitempty"`
	// The most unexpired allocations (hosts' and joiners') this gateway
	// hands out for the relay at public_address, at most 1000000; past it
	// requests get 503 with Retry-After. Handlers with the same
	// public_address share the count, which survives config reloads.
	// Default: 10000.
	MaxAllocations int `json:"max_allocations,omitempty"`
	// The largest request body, in bytes, at most 16 MiB; larger ones get
	// 413. Default: 65536.
	MaxBody int64 `json:"max_body,omitempty"`
	// Each client's /v1/join requests per second; past join_rate and
	// join_burst a client gets 429 with Retry-After. A client is its IPv4
	// address or the client_ipv6_prefix of its IPv6 address, as Caddy
	// determines it (honouring the server's trusted_proxies). This bounds
	// how fast one client can guess join codes. Default: 0.2 (one per 5 s).
	JoinRate float64 `json:"join_rate,omitempty"`
	// /v1/join requests a client may send at once. Default: 10.
	JoinBurst int `json:"join_burst,omitempty"`
	// Each client's /v1/allocate requests per second. Default: 0.2.
	AllocateRate float64 `json:"allocate_rate,omitempty"`
	// /v1/allocate requests a client may send at once. Default: 10.
	AllocateBurst int `json:"allocate_burst,omitempty"`
	// Each client's /v1/joincode requests per second. Default: 1.
	JoinCodeRate float64 `json:"join_code_rate,omitempty"`
	// /v1/joincode requests a client may send at once. Default: 10.
	JoinCodeBurst int `json:"join_code_burst,omitempty"`
	// The most unexpired allocations (hosts' and joiners') one client
	// holds, at most max_allocations; past it the client gets 429 with
	// Retry-After. Default: 100.
	MaxAllocationsPerClient int `json:"max_allocations_per_client,omitempty"`
	// The most clients each endpoint's rate table holds, in [16, 1000000];
	// while one is full of clients that are not idle, new clients get 429.
	// Handlers with the same public_address share the tables, each
	// admitting new clients up to its own max_clients. Default: 65536.
	MaxClients int `json:"max_clients,omitempty"`
	// Let /v1/joincode hand out the join code of any allocation whose ID
	// the caller knows. By default only the client that made an allocation
	// (the same client address, with the same token) gets its join code,
	// which the shipped client does; others get 403. Default: false.
	AnyClientJoinCode bool `json:"any_client_join_code,omitempty"`
	// The prefix length, in bits, that makes one IPv6 client for every
	// per-client limit, in [32, 128]: one subscriber holds at least a /64
	// and varies the rest at will, and often holds a /56 or /48. IPv4
	// clients are single addresses. Default: 64.
	ClientIPv6Prefix int `json:"client_ipv6_prefix,omitempty"`
	// The prefix length, in bits, that makes one IPv4 client network for
	// the per-network limits, in [8, 32]. Default: 24.
	NetworkIPv4Prefix int `json:"network_ipv4_prefix,omitempty"`
	// The prefix length, in bits, that makes one IPv6 client network for
	// the per-network limits, in [32, 128]; a network is never narrower
	// than client_ipv6_prefix. Default: 48.
	NetworkIPv6Prefix int `json:"network_ipv6_prefix,omitempty"`
	// The most unexpired allocations the clients of one network (see
	// network_ipv4_prefix) hold together, at most max_allocations; past it
	// they get 429 with Retry-After. So whoever holds many addresses in
	// few networks takes at most this many allocations per network.
	// Default: 500.
	MaxAllocationsPerNetwork int `json:"max_allocations_per_network,omitempty"`
	// The /v1/join requests per second of one network's clients together,
	// besides each client's join_rate: it bounds join-code guessing from
	// many addresses of one network. Default: 1.
	JoinNetworkRate float64 `json:"join_network_rate,omitempty"`
	// /v1/join requests one network's clients may send at once. Default: 30.
	JoinNetworkBurst int `json:"join_network_burst,omitempty"`
	// Requests without a valid token per second one network may send once
	// it has sent auth_failure_burst of them; past that, every request from
	// the network (with a valid token too) gets 429 with Retry-After, so
	// tokens cannot be guessed faster. Default: 0.1 (one per 10 s).
	AuthFailureRate float64 `json:"auth_failure_rate,omitempty"`
	// Requests without a valid token one network may send at once.
	// Default: 20.
	AuthFailureBurst int `json:"auth_failure_burst,omitempty"`
	// Bind each allocation to the network (network_ipv4_prefix,
	// network_ipv6_prefix) of the client that asked for it: the relay
	// then drops BINDs of it from addresses outside that network, so that
	// a token holder cannot bind an allocation at someone else's address
	// and have the relay send its peers' traffic there. Clients that
	// reach the API and the relay from different networks cannot bind: an
	// API reached over IPv6 with an IPv4 relay, a NAT that gives each flow
	// an address from another network. Relays of earlier gamegate versions
	// cannot open such allocations. Default: false.
	BindToClientNetwork bool `json:"bind_to_client_network,omitempty"`
}

// Validate checks the options' values, named as the relay_allocations
// handler's options are; zero values (the defaults) pass. The required
// parts (Sealer, Store, PublicHost) are NewAPI's to check.
func (c APIConfig) Validate() error {
	if c.PublicPort < 0 || c.PublicPort > math.MaxUint16 {
		return fmt.Errorf("public_address: port %d is not in [1, 65535]", c.PublicPort)
	}
	maxAllocations := c.MaxAllocations
	if maxAllocations == 0 {
		maxAllocations = DefaultMaxAllocations
	}
	for _, check := range []error{
		in("max_connections", c.MaxConnections, 1, MaxAPIMaxConnections),
		ttl("allocation_ttl", c.AllocationTTL.Std()),
		ttl("join_code_ttl", c.JoinCodeTTL.Std()),
		in("max_allocations", c.MaxAllocations, 1, MaxMaxAllocations),
		in("max_body", c.MaxBody, 1, MaxAPIMaxBody),
		ratelimit.ValidateOptions("join_rate", "join_burst", c.JoinRate, c.JoinBurst, MaxAPIBurst),
		ratelimit.ValidateOptions("allocate_rate", "allocate_burst", c.AllocateRate, c.AllocateBurst, MaxAPIBurst),
		ratelimit.ValidateOptions("join_code_rate", "join_code_burst", c.JoinCodeRate, c.JoinCodeBurst, MaxAPIBurst),
		ratelimit.ValidateOptions("join_network_rate", "join_network_burst", c.JoinNetworkRate, c.JoinNetworkBurst, MaxAPIBurst),
		ratelimit.ValidateOptions("auth_failure_rate", "auth_failure_burst", c.AuthFailureRate, c.AuthFailureBurst, MaxAPIBurst),
		in("max_allocations_per_client", c.MaxAllocationsPerClient, 1, int64(maxAllocations), "max_allocations"),
		in("max_allocations_per_network", c.MaxAllocationsPerNetwork, 1, int64(maxAllocations), "max_allocations"),
		in("max_clients", c.MaxClients, MinMaxClients, MaxMaxClients),
		clientaddr.ValidateIPv6Prefix("client_ipv6_prefix", c.ClientIPv6Prefix),
		clientaddr.ValidateNetworkIPv4Prefix("network_ipv4_prefix", c.NetworkIPv4Prefix),
		clientaddr.ValidateIPv6Prefix("network_ipv6_prefix", c.NetworkIPv6Prefix),
		notNegative("sweep_interval", c.SweepInterval),
	} {
		if check != nil {
			return check
		}
	}
	seen := make(map[string]bool, len(c.Regions))
	for _, r := range c.Regions {
		if err := ValidateRegionID(r.ID); err != nil {
			return fmt.Errorf("regions: %w", err)
		}
		if seen[r.ID] {
			return fmt.Errorf("regions: duplicate region %q", r.ID)
		}
		seen[r.ID] = true
	}
	return nil
}

// WithDefaults returns c with every zero field set to its default.
func (c APIConfig) WithDefaults() APIConfig {
	if len(c.Regions) == 0 {
		c.Regions = []APIRegion{{ID: DefaultRegion}}
	}
	c.MaxConnections = cmp.Or(c.MaxConnections, DefaultAPIMaxConnections)
	c.AllocationTTL = cmp.Or(c.AllocationTTL, duration.Duration(DefaultAllocationTTL))
	c.JoinCodeTTL = cmp.Or(c.JoinCodeTTL, duration.Duration(DefaultJoinCodeTTL))
	c.MaxAllocations = cmp.Or(c.MaxAllocations, DefaultMaxAllocations)
	c.MaxBody = cmp.Or(c.MaxBody, DefaultAPIMaxBody)
	c.SweepInterval = cmp.Or(c.SweepInterval, DefaultAPISweepInterval)
	setDefaultRate(&c.JoinRate, &c.JoinBurst, DefaultJoinRate, DefaultJoinBurst)
	setDefaultRate(&c.AllocateRate, &c.AllocateBurst, DefaultAllocateRate, DefaultAllocateBurst)
	setDefaultRate(&c.JoinCodeRate, &c.JoinCodeBurst, DefaultJoinCodeRate, DefaultJoinCodeBurst)
	setDefaultRate(&c.JoinNetworkRate, &c.JoinNetworkBurst, DefaultJoinNetworkRate, DefaultJoinNetworkBurst)
	setDefaultRate(&c.AuthFailureRate, &c.AuthFailureBurst, DefaultAuthFailureRate, DefaultAuthFailureBurst)
	// A smaller max_allocations bounds the per-client and per-network
	// defaults too.
	c.MaxAllocationsPerClient = cmp.Or(c.MaxAllocationsPerClient, min(DefaultMaxAllocationsPerClient, c.MaxAllocations))
	c.MaxAllocationsPerNetwork = cmp.Or(c.MaxAllocationsPerNetwork, min(DefaultMaxAllocationsPerNetwork, c.MaxAllocations))
	c.MaxClients = cmp.Or(c.MaxClients, DefaultMaxClients)
	c.ClientIPv6Prefix = cmp.Or(c.ClientIPv6Prefix, clientaddr.DefaultIPv6Prefix)
	c.NetworkIPv4Prefix = cmp.Or(c.NetworkIPv4Prefix, clientaddr.DefaultNetworkIPv4Prefix)
	c.NetworkIPv6Prefix = cmp.Or(c.NetworkIPv6Prefix, clientaddr.DefaultNetworkIPv6Prefix)
	c.NetworkIPv6Prefix = min(c.NetworkIPv6Prefix, c.ClientIPv6Prefix)
	if c.Limiter == nil {
		c.Limiter = NewAllocationLimiter()
	}
	if c.ClientIP == nil {
		c.ClientIP = clientaddr.RemoteAddr
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

func setDefaultRate(rate *float64, burst *int, defRate float64, defBurst int) {
	if *rate == 0 {
		*rate = defRate
	}
	if *burst == 0 {
		*burst = defBurst
	}
}

// in checks that v is 0 (the default) or in [lo, hi]; hiName names the
// option hi is the value of, if any.
func in[T int | int64](name string, v T, lo, hi int64, hiName ...string) error {
	if len(hiName) == 0 {
		return bounds.Int(name, int64(v), lo, hi)
	}
	if v != 0 && (int64(v) < lo || int64(v) > hi) {
		upper := strconv.FormatInt(hi, 10)
		if len(hiName) > 0 {
			upper = hiName[0] + " (" + upper + ")"
		}
		return fmt.Errorf("%s must be in [%d, %s], not %d", name, lo, upper, v)
	}
	return nil
}

// MaxTTL bounds allocation_ttl and join_code_ttl: a year.
const MaxTTL = 365 * 24 * time.Hour

// ttl checks a lifetime: not negative, then the one rule for durations
// (at least a millisecond) up to MaxTTL.
func ttl(name string, d time.Duration) error {
	if err := notNegative(name, d); err != nil {
		return err
	}
	return bounds.Duration(name, d, 0, MaxTTL)
}

func notNegative(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s must not be negative, not %s", name, d)
	}
	return nil
}
