package tests

import (
	"testing"

	"github.com/gamegate/gamegate/caddymodule"
)

// deprecationsDuring runs load and returns the deprecation warnings (a
// former option name or syntax) the gamegate modules logged meanwhile, as
// caddymodule.Deprecations counts them; the warnings themselves are in the
// log as usual.
func deprecationsDuring(t *testing.T, load func()) []string {
	t.Helper()
	before, _ := caddymodule.Deprecations()
	load()
	after, recent := caddymodule.Deprecations()
	n := int(min(after-before, uint64(len(recent))))
	if after > before && n == 0 {
		return []string{"a deprecation warning"}
	}
	return recent[len(recent)-n:]
}
