package caddyglue

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"
)

// A renamed option keeps its former name as a deprecated alias (the
// contributor guide's "Configuration names" lists them):
//   - JSON under the former key loads: Provision moves the value to the
//     current field (renamed), logging a warning once per configuration
//     load however many modules or elements use it;
//   - a Caddyfile with the former name adapts to the current JSON key
//     (ParseRenamedBlock), with a warning naming the file and line;
//   - giving both names is an error, in JSON and in a Caddyfile. In JSON
//     "given" means non-zero: a module's JSON fields are plain values, so
//     Provision cannot tell a key given as 0 (or "0s", false, "") from one
//     left out, and zero means "the default" for every renamed option. A
//     former name given with the current one at zero therefore loads, with
//     the former name's value and the warning; telling them apart would
//     take a pointer or raw field for every current option, and the
//     Caddyfile, which adapters use, never writes a zero.

// Renamed moves an option given under its former name to its current one,
// warning once per load; giving both is an error. A former option whose
// meaning became several options (the A2S shield's stale_ttl) moves to
// each of more as well.
func Renamed[T comparable](ctx caddy.Context, module, old, current string, oldV, currentV *T, more ...RenamedTo[T]) error {
	var zero T
	if *oldV == zero {
		return nil
	}
	all := append([]RenamedTo[T]{{current, currentV}}, more...)
	names := make([]string, len(all))
	for i, c := range all {
		if *c.Value != zero {
			return BothNames(old, c.Option)
		}
		names[i] = c.Option
	}
	WarnRenamed(ctx, module, old, strings.Join(names, " and "))
	for _, c := range all {
		*c.Value = *oldV
	}
	*oldV = zero
	return nil
}

// RenamedTo is one more current option a former one became.
type RenamedTo[T any] struct {
	Option string
	Value  *T
}

func BothNames(old, current string) error {
	return fmt.Errorf("%s is the former name of %s: give only %s", old, current, current)
}

// warnedRenames holds, for each configuration load being provisioned (the
// context Caddy provisions all of its modules with), the former names
// already warned about, until the load ends.
var warnedRenames sync.Map // context.Context → *sync.Map of module+" "+old

// deprecations counts the warnings of a former option name or syntax this
// process has logged, and keeps the most recent.
var deprecations struct {
	sync.Mutex
	n      uint64
	recent [16]string
}

// NoteDeprecated counts one deprecation warning, described by what.
func NoteDeprecated(what string) {
	deprecations.Lock()
	defer deprecations.Unlock()
	deprecations.recent[deprecations.n%uint64(len(deprecations.recent))] = what
	deprecations.n++
}

// Deprecations returns how many warnings of a former option name or
// syntax this process has logged, and the most recent of them (up to 16,
// oldest first, each "module option → current"). A tool that checks
// configurations compares the count before and after a load.
func Deprecations() (n uint64, recent []string) {
	deprecations.Lock()
	defer deprecations.Unlock()
	size := uint64(len(deprecations.recent))
	for i := deprecations.n - min(deprecations.n, size); i < deprecations.n; i++ {
		recent = append(recent, deprecations.recent[i%size])
	}
	return deprecations.n, recent
}

// WarnRenamed logs that module's option old is now current, once per load.
func WarnRenamed(ctx caddy.Context, module, old, current string) {
	if load := ctx.Context; load != nil {
		names, loaded := warnedRenames.LoadOrStore(load, new(sync.Map))
		if !loaded {
			context.AfterFunc(load, func() { warnedRenames.Delete(load) })
		}
		if _, seen := names.(*sync.Map).LoadOrStore(module+" "+old, true); seen {
			return
		}
	}
	NoteDeprecated(module + " " + old + " → " + current)
	ctx.Logger().Warn("deprecated option name: use the current one",
		zap.String("module", module), zap.String("option", old), zap.String("current", current))
}

// FormerNames maps a module's former Caddyfile option names to their
// current ones.
type FormerNames map[string]string

// warnFormerName logs that a Caddyfile gives module's option current by its
// former name old, at the dispenser's file and line.
func warnFormerName(d *caddyfile.Dispenser, module, old, current string) {
	NoteDeprecated(module + " " + old + " → " + current)
	caddy.Log().Warn("deprecated option name: use the current one",
		zap.String("module", module), zap.String("option", old), zap.String("current", current),
		zap.String("file", d.File()), zap.Int("line", d.Line()))
}
