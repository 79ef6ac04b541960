package tests

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
)

// deprecationsDuring runs load and returns the deprecation warnings (a
// former option name or syntax) the gamegate modules logged meanwhile, as
// caddyglue.Deprecations counts them; the warnings themselves are in the
// log as usual.
func deprecationsDuring(t *testing.T, load func()) []string {
	t.Helper()
	before, _ := caddyglue.Deprecations()
	load()
	after, recent := caddyglue.Deprecations()
	n := int(min(after-before, uint64(len(recent))))
	if after > before && n == 0 {
		return []string{"a deprecation warning"}
	}
	return recent[len(recent)-n:]
}

// The Caddyfile adapt goldens show current option names: every one that
// adapts (not an error golden) adapts and loads without a deprecation
// warning, but those named *_deprecated_*, which keep the former names
// tested and must each warn. A former name that adapts to itself
// (the A2S shield's stale_ttl) warns only when its JSON loads, so each
// golden's JSON is loaded too.
func TestAdaptGoldensUseCurrentNames(t *testing.T) {
	// Goldens that adapt but do not load here, and why; any other that
	// does not load fails, so that none escapes the check unseen.
	notLoading := map[string]bool{
		"relay_allocations_defaults.caddytest": true, // public_address from {env.…}, random text here, not host:port
		"relay_allocations_full.caddytest":     true, // short API tokens on :8080, refused beyond loopback
		"discovery_full.caddytest":             true, // short API keys on :8080, refused beyond loopback
	}
	t.Setenv("HOME", t.TempDir()) // Caddy's default storage, if a golden provisions it
	files, err := filepath.Glob("../caddymodule/testdata/adapt/*.caddytest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt goldens: %v", err)
	}
	envRef := regexp.MustCompile(`\{env\.([A-Za-z0-9_]+)\}`)
	deprecated := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		caddyfile, want, _ := strings.Cut(string(data), "----------")
		if strings.HasPrefix(strings.TrimSpace(want), "error:") {
			continue
		}
		for _, m := range envRef.FindAllStringSubmatch(caddyfile, -1) {
			if _, set := os.LookupEnv(m[1]); !set {
				t.Setenv(m[1], rand.Text()+rand.Text())
			}
		}
		name := filepath.Base(file)
		warned := deprecationsDuring(t, func() {
			config, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": name})
			if err != nil {
				t.Errorf("%s: does not adapt: %v", name, err)
				return
			}
			if err := validateDoc(t, config); err != nil {
				if !notLoading[name] {
					t.Errorf("%s: does not load: %v", name, err)
					return
				}
				t.Logf("%s: does not load, as expected (its deprecations at load are not seen): %v", name, err)
			} else if notLoading[name] {
				t.Errorf("%s: loads now: check its deprecations at load by removing it from notLoading", name)
			}
		})
		if strings.Contains(name, "_deprecated_") {
			deprecated++
			if len(warned) == 0 {
				t.Errorf("%s: no deprecation warning; a deprecated-name golden must use a former name", name)
			}
			continue
		}
		for _, d := range warned {
			t.Errorf("%s: uses a former name: %s; give the current one (the former names have their *_deprecated_* goldens)", name, d)
		}
	}
	if deprecated == 0 {
		t.Fatal("no *_deprecated_* goldens")
	}
}
