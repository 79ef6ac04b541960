package caddyglue

import (
	"errors"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/internal/bounds"
)

// ParseConfigBlock is ParseRenamedModuleBlock for a module whose options
// its Config's Validate checks: option reads each option, then validate
// runs once, on the whole block. Its error is reported at the line of the
// option it is about (OptionNamed: the option a *bounds.RangeError names,
// else the given option the error's text names first), or of the module's
// name when it names none of the options given, so that a cross-field
// error points at the option to change.
func ParseConfigBlock(d *caddyfile.Dispenser, block string, repeatable []string, former FormerNames, option func(name string) error, validate func() error) error {
	d.Next() // the module name, where an error naming no option is reported
	at := map[string]caddyfile.Token{"": d.Token()}
	d.Prev() // for ParseRenamedModuleBlock to consume it
	err := ParseRenamedModuleBlock(d, block, repeatable, former, func(name string) error {
		if _, seen := at[name]; !seen { // a repeatable option: its first line
			at[name] = d.Token()
		}
		return option(name)
	})
	if err != nil {
		return err
	}
	if err := validate(); err != nil {
		given := make([]string, 0, len(at))
		for name := range at {
			if name != "" {
				given = append(given, name)
			}
		}
		return blockErrf(dispenserAt(at[OptionNamed(err, given)]), block, "%w", err)
	}
	return nil
}

// dispenserAt returns a dispenser on tok, whose errors (Errf) carry tok's
// file, line and import chain.
func dispenserAt(tok caddyfile.Token) *caddyfile.Dispenser {
	d := caddyfile.NewDispenser([]caddyfile.Token{tok})
	d.Next()
	return d
}

// OptionNamed returns the option of names that err, a Validate error, is
// about: the one a *bounds.RangeError names, else the one its text names
// first as a whole word (errors name their options, as JSON and the
// Caddyfile spell them: "client_ipv6_prefix applies to source_key ip"),
// the longest where several start there; "" if it names none of them.
func OptionNamed(err error, names []string) string {
	var r *bounds.RangeError
	if errors.As(err, &r) {
		for _, name := range names {
			if name == r.Name {
				return name
			}
		}
	}
	msg := err.Error()
	best, bestAt := "", len(msg)
	for _, name := range names {
		i := wordIndex(msg, name)
		if i >= 0 && (i < bestAt || i == bestAt && len(name) > len(best)) {
			best, bestAt = name, i
		}
	}
	return best
}

// wordIndex is the index of the first occurrence of word in s that is a
// whole word (not part of a longer option name such as
// max_allocations_per_client for max_allocations), or -1.
func wordIndex(s, word string) int {
	if word == "" {
		return -1
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(word)
		if (i == 0 || !isNameByte(s[i-1])) && (end == len(s) || !isNameByte(s[end])) {
			return i
		}
		from = i + 1
	}
	return -1
}

// isNameByte reports whether c may be part of an option's name.
func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
