package tests

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// validateExample adapts Caddyfile.example under env and provisions it
// without starting it (nothing listens), as `gamegate validate` does.
func validateExample(t *testing.T, env map[string]string) error {
	t.Helper()
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GAMEGATE_BIND", "GAMEGATE_RELAY_LISTEN", "GAMEGATE_RELAY_SECRET", "GAMEGATE_RELAY_TOKEN"} {
		t.Setenv(k, env[k])
		if env[k] == "" {
			os.Unsetenv(k)
		}
	}
	adapted := testcaddy.AdaptCaddyfile(t, string(example))
	if os.Getenv("GAMEGATE_TEST_LOG") == "" {
		adapted["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}}
	}
	raw, err := json.Marshal(adapted)
	if err != nil {
		t.Fatal(err)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return caddy.Validate(&cfg)
}

// The example runs on loopback with its development secret and token; the
// moment a listener leaves loopback, those defaults and short secrets are
// refused with an error naming the option and the variable to set.
func TestExampleRefusesDevelopmentSecretsBeyondLoopback(t *testing.T) {
	const strong = "0123456789abcdef0123456789abcdef-strong"
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // substrings of the error; none: no error
	}{
		{"loopback with the development defaults", nil, nil},
		{"relay beyond loopback with the development secret",
			map[string]string{"GAMEGATE_RELAY_LISTEN": "0.0.0.0:7777"},
			[]string{"relay: secrets", "development default", "0.0.0.0:7777", "GAMEGATE_RELAY_SECRET"}},
		{"relay beyond loopback with a short secret",
			map[string]string{"GAMEGATE_RELAY_LISTEN": "0.0.0.0:7777", "GAMEGATE_RELAY_SECRET": "a-secret-of-31-bytes-xxxxxxxxxx"},
			[]string{"relay: secrets", "shorter than 32 bytes"}},
		{"relay beyond loopback with a strong secret",
			map[string]string{"GAMEGATE_RELAY_LISTEN": "0.0.0.0:7777", "GAMEGATE_RELAY_SECRET": strong}, nil},
		{"allocations API beyond loopback with the development token",
			map[string]string{"GAMEGATE_BIND": "0.0.0.0", "GAMEGATE_RELAY_SECRET": strong},
			[]string{"relay_allocations: tokens", "development default", "GAMEGATE_RELAY_TOKEN"}},
		{"allocations API beyond loopback with the development secret",
			map[string]string{"GAMEGATE_BIND": "0.0.0.0", "GAMEGATE_RELAY_TOKEN": "a-token-for-this-test"},
			[]string{"relay_allocations: secrets", "GAMEGATE_RELAY_SECRET"}},
		{"allocations API beyond loopback, configured",
			map[string]string{"GAMEGATE_BIND": "0.0.0.0", "GAMEGATE_RELAY_SECRET": strong, "GAMEGATE_RELAY_TOKEN": "a-token-for-this-test"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateExample(t, tc.env)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want the configuration accepted", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error saying %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The gamegate app's relay refuses a development secret on an address
// beyond loopback, as the layer4 relay does, and takes it on loopback.
func TestGamegateAppRefusesDevelopmentSecretsBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen string
		refuse bool
	}{{"127.0.0.1:7777", false}, {"0.0.0.0:7777", true}, {":7777", true}} {
		cfg := testcaddy.AdaptCaddyfile(t, `{
	gamegate {
		udp `+tc.listen+` {
			relay {
				secrets dev-only-relay-secret-change-me
			}
		}
	}
}`)
		cfg["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}}
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var c caddy.Config
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		err = caddy.Validate(&c)
		switch {
		case tc.refuse && (err == nil || !strings.Contains(err.Error(), "development default") || !strings.Contains(err.Error(), "GAMEGATE_RELAY_SECRET")):
			t.Errorf("%s: got %v, want the development secret refused, naming GAMEGATE_RELAY_SECRET", tc.listen, err)
		case !tc.refuse && err != nil:
			t.Errorf("%s: got %v, want it accepted", tc.listen, err)
		}
	}
}
