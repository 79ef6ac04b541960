package caddymodule

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

// intRange is the valid range of an integer option, bounds included.
type intRange struct{ lo, hi int64 }

func (r intRange) contains(v int64) bool { return v >= r.lo && v <= r.hi }

// clientIPv6PrefixRange bounds the client_ipv6_prefix options: the prefix
// length that makes one IPv6 client (package clientaddr).
var clientIPv6PrefixRange = intRange{clientaddr.MinIPv6Prefix, clientaddr.MaxIPv6Prefix}

// checker collects the first configuration error of a module, naming the
// field as JSON and the Caddyfile do. Caddy prefixes a module's errors
// with its ID: a checker of no module (fieldChecker) adds nothing more.
type checker struct {
	module string
	err    error
}

func newChecker(module string) *checker { return &checker{module: module} }

// fieldChecker returns a checker whose errors start with the field.
func fieldChecker() *checker { return new(checker) }

// errorf is an error of c's module.
func (c *checker) errorf(format string, args ...any) error {
	if c.module == "" {
		return fmt.Errorf(format, args...)
	}
	return fmt.Errorf("%s: "+format, append([]any{c.module}, args...)...)
}

func (c *checker) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = c.errorf("%s %s", field, fmt.Sprintf(format, args...))
	}
}

// in checks that v is in r.
func (c *checker) in(field string, v int64, r intRange) {
	if !r.contains(v) {
		c.fail(field, "must be in [%d, %d], not %d", r.lo, r.hi, v)
	}
}

// optIn checks that v is 0 (the default) or in r.
func (c *checker) optIn(field string, v int64, r intRange) {
	if v != 0 {
		c.in(field, v, r)
	}
}

// durationRange is the valid range of a duration option, bounds included.
type durationRange struct{ lo, hi time.Duration }

func (r durationRange) contains(d caddy.Duration) bool {
	return time.Duration(d) >= r.lo && time.Duration(d) <= r.hi
}

// The upper bounds of duration options keep every duration derived from
// one (attempts × upstream_timeout and a second, ten times a ttl) far from
// time.Duration's limit (about 292 years): past it a wait overflows to a
// negative duration and ends at once.
var (
	// timeoutRange bounds the timeouts of upstream requests and the
	// windows challenges stay valid in.
	timeoutRange = durationRange{0, time.Hour}
	// ttlRange bounds how long answers are cached and served stale, and
	// the other lifetimes (bans, lockouts, authorisations, polls, idle
	// bindings, health-check intervals).
	ttlRange = durationRange{0, 24 * time.Hour}
	// challengeWindowRange bounds how long a challenge stays valid: under
	// a second, a client's answer arrives after its challenge ended.
	challengeWindowRange = durationRange{time.Second, time.Hour}
	// cacheTTLRange bounds how long a shield reuses an answer: under
	// 100ms, every request is a query of the game server it shields.
	cacheTTLRange = durationRange{100 * time.Millisecond, 24 * time.Hour}
)

// durationIn checks that d is 0 (the default) or in r, and not under
// bounds.MinDuration (a bare JSON number is nanoseconds): the one rule of
// every duration option.
func (c *checker) durationIn(field string, d caddy.Duration, r durationRange) {
	if err := bounds.Duration(field, time.Duration(d), r.lo, r.hi); err != nil && c.err == nil {
		c.err = c.errorf("%w", err)
	}
}

// number checks that f is finite and not negative (0 is the default).
func (c *checker) number(field string, f float64) {
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		c.fail(field, "must be a positive number, not %v", f)
	}
}

// oneOf checks that s is empty (the default) or one of choices.
func (c *checker) oneOf(field, s string, choices ...string) {
	if s != "" && !slices.Contains(choices, s) {
		c.fail(field, "must be one of %s, not %q", strings.Join(choices, ", "), s)
	}
}

// check records err, if any, as the error of field.
func (c *checker) check(field string, err error) {
	if err != nil {
		c.fail(field, "%v", err)
	}
}

// rate checks a rate limit: rate events per second (0 for the default)
// with burst at once (0 for the default).
func (c *checker) rate(rateField, burstField string, rate float64, burst int64) {
	c.number(rateField, rate)
	c.optIn(burstField, burst, burstRange)
	if c.err == nil {
		if err := ratelimit.ValidateNamed(rateField, burstField, rate, int(max(burst, 1))); err != nil {
			c.err = c.errorf("%w", err)
		}
	}
}

// burstRange bounds every burst option.
var burstRange = intRange{1, ratelimit.MaxBurst}

func fmtDuration(d caddy.Duration) string { return time.Duration(d).String() }
