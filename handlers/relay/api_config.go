package relay

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"github.com/gamegate/gamegate/internal/bounds"
	"math"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/clientaddr"
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
		ttl("allocation_ttl", c.AllocationTTL),
		ttl("join_code_ttl", c.JoinCodeTTL),
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
	c.AllocationTTL = cmp.Or(c.AllocationTTL, DefaultAllocationTTL)
	c.JoinCodeTTL = cmp.Or(c.JoinCodeTTL, DefaultJoinCodeTTL)
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
