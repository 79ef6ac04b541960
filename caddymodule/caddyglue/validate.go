package caddyglue

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Configuration ranges are checked in each module's Validate, whether the
// configuration came from JSON (/load, gamegate validate) or a Caddyfile.
// The Caddyfile parsers check the same ranges as they read each option, so
// that an error there points at the file and line; both use the ranges
// declared beside each module's struct.

// IntRange is the valid range of an integer option, bounds included.
type IntRange struct{ Lo, Hi int64 }

func (r IntRange) Contains(v int64) bool { return v >= r.Lo && v <= r.Hi }

// ClientIPv6PrefixRange bounds the client_ipv6_prefix options: the prefix
// length that makes one IPv6 client (package clientaddr).
var ClientIPv6PrefixRange = IntRange{clientaddr.MinIPv6Prefix, clientaddr.MaxIPv6Prefix}

// Checker collects the first configuration error of a module, naming the
// field as JSON and the Caddyfile do. Caddy prefixes a module's errors
// with its ID: a Checker of no module (FieldChecker) adds nothing more.
type Checker struct {
	module string
	Err    error
}

func NewChecker(module string) *Checker { return &Checker{module: module} }

// FieldChecker returns a Checker whose errors start with the field.
func FieldChecker() *Checker { return new(Checker) }

// errorf is an error of c's module.
func (c *Checker) errorf(format string, args ...any) error {
	if c.module == "" {
		return fmt.Errorf(format, args...)
	}
	return fmt.Errorf("%s: "+format, append([]any{c.module}, args...)...)
}

func (c *Checker) Fail(field, format string, args ...any) {
	if c.Err == nil {
		c.Err = c.errorf("%s %s", field, fmt.Sprintf(format, args...))
	}
}

// in checks that v is in r.
func (c *Checker) In(field string, v int64, r IntRange) {
	if !r.Contains(v) {
		c.Fail(field, "must be in [%d, %d], not %d", r.Lo, r.Hi, v)
	}
}

// OptIn checks that v is 0 (the default) or in r.
func (c *Checker) OptIn(field string, v int64, r IntRange) {
	if v != 0 {
		c.In(field, v, r)
	}
}

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
	// challengeWindowRange bounds how long a challenge stays valid: under
	// a second, a client's answer arrives after its challenge ended.
	challengeWindowRange = DurationRange{time.Second, time.Hour}
	// cacheTTLRange bounds how long a shield reuses an answer: under
	// 100ms, every request is a query of the game server it shields.
	cacheTTLRange = DurationRange{100 * time.Millisecond, 24 * time.Hour}
)

// DurationIn checks that d is 0 (the default) or in r, and not under
// bounds.MinDuration (a bare JSON number is nanoseconds): the one rule of
// every duration option.
func (c *Checker) DurationIn(field string, d caddy.Duration, r DurationRange) {
	if err := bounds.Duration(field, time.Duration(d), r.Lo, r.Hi); err != nil && c.Err == nil {
		c.Err = c.errorf("%w", err)
	}
}

// number checks that f is finite and not negative (0 is the default).
func (c *Checker) number(field string, f float64) {
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		c.Fail(field, "must be a positive number, not %v", f)
	}
}

// OneOf checks that s is empty (the default) or one of choices.
func (c *Checker) OneOf(field, s string, choices ...string) {
	if s != "" && !slices.Contains(choices, s) {
		c.Fail(field, "must be one of %s, not %q", strings.Join(choices, ", "), s)
	}
}

// check records err, if any, as the error of field.
func (c *Checker) check(field string, err error) {
	if err != nil {
		c.Fail(field, "%v", err)
	}
}

// rate checks a rate limit: rate events per second (0 for the default)
// with burst at once (0 for the default).
func (c *Checker) Rate(rateField, burstField string, rate float64, burst int64) {
	c.number(rateField, rate)
	c.OptIn(burstField, burst, BurstRange)
	if c.Err == nil {
		if err := ratelimit.ValidateNamed(rateField, burstField, rate, int(max(burst, 1))); err != nil {
			c.Err = c.errorf("%w", err)
		}
	}
}

// BurstRange bounds every burst option.
var BurstRange = IntRange{1, ratelimit.MaxBurst}

func FmtDuration(d caddy.Duration) string { return time.Duration(d).String() }
