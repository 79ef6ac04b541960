package caddyglue

import (
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Configuration ranges are checked by the handlers' Configs, with
// internal/bounds, whether the configuration came from JSON (/load,
// gamegate validate) or a Caddyfile. The Caddyfile parsers read an option
// in a range (IntRange, DurationRange), so that an error there points at
// the file and line: the range its Config's Validate reports
// (ConfigRange), or one of the few shared here.

// IntRange is the valid range of an integer option, bounds included.
type IntRange struct{ Lo, Hi int64 }

// Contains reports whether v is in r.
func (r IntRange) Contains(v int64) bool { return v >= r.Lo && v <= r.Hi }

// ClientIPv6PrefixRange bounds the client_ipv6_prefix options: the prefix
// length that makes one IPv6 client (package clientaddr).
var ClientIPv6PrefixRange = IntRange{clientaddr.MinIPv6Prefix, clientaddr.MaxIPv6Prefix}

// NetworkIPv4PrefixRange bounds the network_ipv4_prefix options: the
// prefix length that makes one IPv4 client network (package clientaddr).
var NetworkIPv4PrefixRange = IntRange{clientaddr.MinNetworkIPv4Prefix, clientaddr.MaxNetworkIPv4Prefix}

// DurationRange is the valid range of a duration option, bounds included.
type DurationRange struct{ Lo, Hi time.Duration }

func (r DurationRange) Contains(d caddy.Duration) bool {
	return time.Duration(d) >= r.Lo && time.Duration(d) <= r.Hi
}

// The upper bounds of duration options keep every duration derived from
// one (attempts × upstream_timeout and a second, ten times a ttl) far from
// time.Duration's limit (about 292 years): past it a wait overflows to a
// negative duration and ends at once.
var (
	// TimeoutRange bounds the timeouts of upstream requests and the
	// windows challenges stay valid in.
	TimeoutRange = DurationRange{0, time.Hour}
	// TtlRange bounds how long answers are cached and served stale, and
	// the other lifetimes (bans, lockouts, authorisations, polls, idle
	// bindings, health-check intervals).
	TtlRange = DurationRange{0, 24 * time.Hour}
)

// PositiveRange is every positive integer an int32 holds: the syntax of
// a count whose upper bound the handler's Validate checks once the block
// is read.
var PositiveRange = IntRange{1, 1<<31 - 1}

// BurstRange bounds every burst option.
var BurstRange = IntRange{1, ratelimit.MaxBurst}

// FmtDuration writes d as time.Duration does.
func FmtDuration(d caddy.Duration) string { return time.Duration(d).String() }
