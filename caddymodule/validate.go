package caddymodule

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

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
// field as JSON and the Caddyfile do.
type checker struct {
	module string
	err    error
}

func newChecker(module string) *checker { return &checker{module: module} }

func (c *checker) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s: %s %s", c.module, field, fmt.Sprintf(format, args...))
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
)

// durationIn checks that d is 0 (the default) or in r.
func (c *checker) durationIn(field string, d caddy.Duration, r durationRange) {
	if d != 0 && !r.contains(d) {
		c.fail(field, "must be a duration in [%s, %s], not %s", fmtDuration(caddy.Duration(r.lo)), fmtDuration(caddy.Duration(r.hi)), fmtDuration(d))
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
			c.err = fmt.Errorf("%s: %w", c.module, err)
		}
	}
}

// burstRange bounds every burst option.
var burstRange = intRange{1, ratelimit.MaxBurst}

func fmtDuration(d caddy.Duration) string { return time.Duration(d).String() }

// exclusive refuses an option given under both its former and its current
// name.
func (c *checker) exclusive(old, current string, hasOld, hasCurrent bool) {
	if hasOld && hasCurrent {
		c.fail(old, "is the former name of %s: give only %s", current, current)
	}
}

// renamed moves an option given under its former name to its current one,
// logging a deprecation warning; giving both is an error. A former option
// that became several (its meaning split in two) moves to each of more as
// well, with one warning. An empty module leaves the error unprefixed,
// for Caddy names the module already.
func renamed[T comparable](logger *zap.Logger, module, old, current string, oldV, currentV *T, more ...renamedTo[T]) error {
	var zero T
	if *oldV == zero {
		return nil
	}
	all := append([]renamedTo[T]{{current, currentV}}, more...)
	names := make([]string, len(all))
	for i, c := range all {
		names[i] = c.name
		if *c.v != zero {
			err := fmt.Errorf("%s is the former name of %s: give only %s", old, c.name, c.name)
			if module != "" {
				err = fmt.Errorf("%s: %w", module, err)
			}
			return err
		}
	}
	logger.Warn("deprecated option: use its current name", zap.String("option", old), zap.String("current", strings.Join(names, " and ")))
	for _, c := range all {
		*c.v = *oldV
	}
	*oldV = zero
	return nil
}

// renamedTo is one of the current options a former one became.
type renamedTo[T any] struct {
	name string
	v    *T
}
