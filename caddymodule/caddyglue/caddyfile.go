package caddyglue

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
)

// Shared Caddyfile argument parsers. Each consumes exactly one argument after
// the current option and reports errors naming the option.

func ParseSingleArg(d *caddyfile.Dispenser) (string, error) {
	opt := d.Val()
	if !d.NextArg() {
		return "", d.Errf("option '%s' needs a value", opt)
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.Errf("option '%s' takes one value, got extra '%s'", opt, d.Val())
	}
	return v, nil
}

// ParseArgs reads the one or more values of the current option.
func ParseArgs(d *caddyfile.Dispenser) ([]string, error) {
	opt := d.Val()
	values := d.RemainingArgs()
	if len(values) == 0 {
		return nil, d.Errf("option '%s' needs at least one value", opt)
	}
	return values, nil
}

func ParseIntRange(d *caddyfile.Dispenser, lo, hi int) (int, error) {
	return ParseIntIn(d, IntRange{int64(lo), int64(hi)})
}

// ParseIntIn reads an integer in r.
func ParseIntIn(d *caddyfile.Dispenser, r IntRange) (int, error) {
	opt := d.Val()
	s, err := ParseSingleArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || !r.Contains(n) {
		return 0, d.Errf("option '%s': want an integer in [%d, %d], got '%s'", opt, r.Lo, r.Hi, s)
	}
	return int(n), nil
}

// ParseSize reads a size in bytes in r: a number, optionally with a unit
// (B, KB, KiB, MB, MiB, GB or GiB, in any case), such as 65536 or 64KiB.
func ParseSize[T int | int64](d *caddyfile.Dispenser, r IntRange) (T, error) {
	opt := d.Val()
	s, err := ParseSingleArg(d)
	if err != nil {
		return 0, err
	}
	n, ok := ParseByteSize(s)
	if !ok || !r.Contains(n) {
		return 0, d.Errf("option '%s': want a size in [%d, %d] bytes (such as 65536 or 64KiB), got '%s'", opt, r.Lo, r.Hi, s)
	}
	return T(n), nil
}

// ParseByteSize parses a number of bytes with an optional unit.
func ParseByteSize(s string) (int64, bool) {
	digits := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := map[string]int64{
		"": 1, "b": 1, "kb": 1000, "kib": 1 << 10, "mb": 1000 * 1000, "mib": 1 << 20,
		"gb": 1000 * 1000 * 1000, "gib": 1 << 30,
	}[strings.ToLower(s[len(digits):])]
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || unit == 0 || n > math.MaxInt64/unit {
		return 0, false
	}
	return n * unit, true
}

func ParsePositiveFloat(d *caddyfile.Dispenser) (float64, error) {
	opt := d.Val()
	s, err := ParseSingleArg(d)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, d.Errf("option '%s': want a positive number, got '%s'", opt, s)
	}
	return f, nil
}

// ParseDuration parses a positive duration.
func ParseDuration(d *caddyfile.Dispenser) (caddy.Duration, error) {
	return ParseDurationIn(d, DurationRange{0, math.MaxInt64})
}

// ParseDurationIn parses a positive duration in r.
func ParseDurationIn(d *caddyfile.Dispenser, r DurationRange) (caddy.Duration, error) {
	opt := d.Val()
	s, err := ParseSingleArg(d)
	if err != nil {
		return 0, err
	}
	want := "a positive duration"
	switch {
	case r.Lo > 0:
		want += " from " + FmtDuration(caddy.Duration(r.Lo)) + " to " + FmtDuration(caddy.Duration(r.Hi))
	case r.Hi < math.MaxInt64:
		want += " up to " + FmtDuration(caddy.Duration(r.Hi))
	}
	dur, err := caddy.ParseDuration(s)
	// Every duration option is at least bounds.MinDuration; a range that
	// starts higher says so in want.
	if err == nil && dur > 0 && dur < bounds.MinDuration && r.Lo < bounds.MinDuration {
		return 0, d.Errf("option '%s': want a duration of at least %s, got '%s'", opt, bounds.MinDuration, s)
	}
	if err != nil || dur <= 0 || !r.Contains(caddy.Duration(dur)) {
		return 0, d.Errf("option '%s': want %s, got '%s'", opt, want, s)
	}
	return caddy.Duration(dur), nil
}

func ParseOneOf(d *caddyfile.Dispenser, choices ...string) (string, error) {
	opt := d.Val()
	s, err := ParseSingleArg(d)
	if err != nil {
		return "", err
	}
	if !slices.Contains(choices, s) {
		return "", d.Errf("option '%s': want one of %s, got '%s'", opt, strings.Join(choices, ", "), s)
	}
	return s, nil
}

func ParseFloatArg(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, strconv.ErrSyntax
	}
	return f, nil
}

func ParseIntArg(s string) (int, error) { return strconv.Atoi(s) }

// ParseFlag sets an option that takes no value; a value is an error that
// names the option.
func ParseFlag(d *caddyfile.Dispenser, flag *bool) error {
	opt := d.Val()
	if d.NextArg() {
		return d.Errf("option '%s' takes no value, got '%s'", opt, d.Val())
	}
	*flag = true
	return nil
}

// ParseBlock calls option for each option of the block that follows, in
// order. An option given twice is an error naming it, except those listed
// as repeatable. block starts the errors ("qos", "gqp: command 'x'"); it is
// "" in a Caddyfile directive or global option (game_query, gamegate),
// whose errors Caddy starts with its name ("parsing caddyfile tokens for
// 'game_query': …"), or in a directive's sub-block named by its option
// ("health_check", "udp").
func ParseBlock(d *caddyfile.Dispenser, block string, repeatable []string, option func(name string) error) error {
	return ParseRenamedBlock(d, block, block, repeatable, nil, option)
}

// ParseRenamedBlock is ParseBlock for a module with renamed options: one
// given by its former name (a key of former) is passed to option under its
// current name, with a warning naming module; giving both names is an
// error. option can tell the spelling given from d.Val().
func ParseRenamedBlock(d *caddyfile.Dispenser, module, block string, repeatable []string, former FormerNames, option func(name string) error) error {
	given := make(map[string]string) // by current name, the name given
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		as := d.Val()
		name := as
		if current, ok := former[as]; ok {
			name = current
			warnFormerName(d, module, as, current)
		}
		if prev, seen := given[name]; seen && !slices.Contains(repeatable, name) {
			if prev != as { // the former and the current name
				old := prev
				if old == name {
					old = as
				}
				return blockErrf(d, block, "%v", BothNames(old, name))
			}
			return blockErrf(d, block, "duplicate option '%s'", as)
		}
		given[name] = as
		if err := option(name); err != nil {
			return err
		}
		if err := noBlock(d, block, as); err != nil {
			return err
		}
	}
	return nil
}

// ParseModuleBlock consumes a module's name, refuses arguments after it,
// and parses the block that follows with ParseBlock.
func ParseModuleBlock(d *caddyfile.Dispenser, block string, repeatable []string, option func(name string) error) error {
	return ParseRenamedModuleBlock(d, block, repeatable, nil, option)
}

// ParseRenamedModuleBlock is ParseModuleBlock for a module with renamed
// options (see ParseRenamedBlock); the warnings name block, or for a
// directive (block "") the directive.
func ParseRenamedModuleBlock(d *caddyfile.Dispenser, block string, repeatable []string, former FormerNames, option func(name string) error) error {
	d.Next() // consume the module name
	module := block
	if module == "" {
		module = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	return ParseRenamedBlock(d, module, block, repeatable, former, option)
}

// noBlock refuses a block after an option that takes none (options that
// take one have consumed it by now).
func noBlock(d *caddyfile.Dispenser, block, name string) error {
	line, val := d.Line(), d.Val()
	if d.NextBlock(d.Nesting()) || d.Val() != val || d.Line() != line {
		return blockErrf(d, block, "option '%s' takes no block", name)
	}
	return nil
}

// ParseNoOptions consumes the name of a module that takes neither
// arguments nor options (the protocol matchers), refusing any.
func ParseNoOptions(d *caddyfile.Dispenser, block string) error {
	d.Next() // consume the module name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(d.Nesting()) {
		return blockErrf(d, block, "takes no options, got '%s'", d.Val())
	}
	return nil
}

// blockErrf is an error of a Caddyfile block, started with block unless
// it is "" (see ParseBlock).
func blockErrf(d *caddyfile.Dispenser, block, format string, args ...any) error {
	if block == "" {
		return d.Errf(format, args...)
	}
	return d.Errf("%s: "+format, append([]any{block}, args...)...)
}

// UnknownOption is the error for an option a block does not have.
func UnknownOption(d *caddyfile.Dispenser, block, name string) error {
	return blockErrf(d, block, "unrecognized option '%s'", name)
}

// ParseConfigDuration parses a positive duration into a handler Config's
// duration option, whose range the Config's Validate checks.
func ParseConfigDuration(d *caddyfile.Dispenser) (duration.Duration, error) {
	v, err := ParseDuration(d)
	return duration.Duration(v), err
}

// ParseConfigDurationIn parses a positive duration in r into a handler
// Config's duration option.
func ParseConfigDurationIn(d *caddyfile.Dispenser, r DurationRange) (duration.Duration, error) {
	v, err := ParseDurationIn(d, r)
	return duration.Duration(v), err
}
