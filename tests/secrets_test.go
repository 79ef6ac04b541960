package tests

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// Secrets given as {env.X} (or {env.X:default}) are read when the module
// is provisioned: the JSON configuration (GET /config/, autosave.json) holds
// only the placeholder. The Caddyfile's {$X} is replaced when the Caddyfile
// is adapted, so the value is in the configuration: checked here too, as
// the reason the docs use {env.X}. And X-Api-Key, which Caddy's access log
// does not redact (only Authorization, Proxy-Authorization and cookies), is
// redacted by the log filter docs/security.md shows.
func TestSecretsStayOutOfTheConfigAndTheAccessLog(t *testing.T) {
	const (
		secret = "relay-secret-from-the-environment-0123456789"
		token  = "api-token-from-the-environment-0123456789"
	)
	t.Setenv("GAMEGATE_TEST_SECRET", secret)
	t.Setenv("GAMEGATE_TEST_TOKEN", token)
	t.Setenv("GAMEGATE_TEST_UNSET", "")
	accessLog := filepath.Join(t.TempDir(), "access.log")
	site := func(secrets, tokens string) string {
		return fmt.Sprintf(`http://%%s {
	bind 127.0.0.1
	log {
		output file %s
		format filter {
			request>headers>X-Api-Key replace REDACTED
		}
	}
	handle /relay/* {
		relay_allocations {
			secrets %s
			tokens %s
			public_address 127.0.0.1:7777
		}
	}
}
`, accessLog, secrets, tokens)
	}
	for _, tc := range []struct {
		name           string
		secrets        string
		tokens         string
		leaks          bool
		tokenToPresent string
	}{
		{"env", "{env.GAMEGATE_TEST_SECRET}", "{env.GAMEGATE_TEST_TOKEN}", false, token},
		{"env with a default, set", "{env.GAMEGATE_TEST_SECRET:dev-only-relay-secret-change-me}", "{env.GAMEGATE_TEST_TOKEN:dev-only-token}", false, token},
		{"env with a default, unset", "{env.GAMEGATE_TEST_UNSET:dev-only-relay-secret-change-me}", "{env.GAMEGATE_TEST_UNSET:dev-only-token}", false, "dev-only-token"},
		{"adapt-time {$X}", "{$GAMEGATE_TEST_SECRET}", "{$GAMEGATE_TEST_TOKEN}", true, token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			httpAddr := testutil.FreeTCPAddr(t)
			c := testcaddy.Start(t, fmt.Sprintf(site(tc.secrets, tc.tokens), httpAddr))
			config := get(t, "http://"+c.AdminAddr+"/config/")
			inConfig := strings.Contains(config, secret) || strings.Contains(config, token)
			if inConfig != tc.leaks {
				t.Fatalf("secret or token in GET /config/: %v, want %v:\n%s", inConfig, tc.leaks, config)
			}
			base := "http://" + httpAddr + "/relay/v1/allocate"
			for _, h := range [][2]string{{"Authorization", "Bearer " + tc.tokenToPresent}, {"X-Api-Key", tc.tokenToPresent}} {
				if r := request(t, "POST", base, h[0], h[1]); r.status == http.StatusUnauthorized {
					t.Fatalf("%s with the configured token: 401", h[0])
				}
			}
			if r := request(t, "POST", base, "X-Api-Key", "not-the-token"); r.status != http.StatusUnauthorized {
				t.Fatalf("a wrong token: got %d, want 401", r.status)
			}
		})
	}
	logged, err := os.ReadFile(accessLog)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logged), token) || !strings.Contains(string(logged), `"X-Api-Key":"REDACTED"`) ||
		!strings.Contains(string(logged), `"Authorization":["REDACTED"]`) {
		t.Fatalf("access log: want X-Api-Key and Authorization redacted, no token:\n%s", logged)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// gamegate qos-check sends its discovery API key as "Authorization:
// Bearer", which Caddy's access log redacts by default: with a plain
// access log (no filter), the key is nowhere in it. It was sent as
// X-Api-Key, which the log records whole.
func TestQoSCheckKeyStaysOutOfTheAccessLog(t *testing.T) {
	const key = "discovery-key-from-the-environment-0123456789"
	t.Setenv("GAMEGATE_TEST_DISCOVERY_KEY", key)
	bin := testutil.BuildGamegate(t)
	qosAddr, httpAddr := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	accessLog := filepath.Join(t.TempDir(), "access.log")
	testcaddy.Start(t, fmt.Sprintf(`{
	gamegate {
		udp %s {
			qos
		}
	}
}

http://%s {
	log {
		output file %s
	}
	qos_discovery {
		fleet f {
			server eu 1 %s
		}
		api_keys {env.GAMEGATE_TEST_DISCOVERY_KEY}
	}
}
`, qosAddr, httpAddr, accessLog, qosAddr))
	base := []string{"qos-check", "--discovery", "http://" + httpAddr, "--fleet", "f", "--requests", "3", "--wait", "500ms"}
	if code, out := runGamegate(t, bin, append(base, "--api-key", key)...); code != 0 || !strings.Contains(out, "eu") {
		t.Fatalf("qos-check --api-key: exit %d, want 0 with region eu:\n%s", code, out)
	}
	t.Setenv("GAMEGATE_DISCOVERY_KEY", key)
	if code, out := runGamegate(t, bin, base...); code != 0 || !strings.Contains(out, "eu") {
		t.Fatalf("qos-check with $GAMEGATE_DISCOVERY_KEY: exit %d, want 0 with region eu:\n%s", code, out)
	}
	var logged []byte
	testutil.WaitFor(t, "both requests in the access log", func() bool {
		logged, _ = os.ReadFile(accessLog)
		return strings.Count(string(logged), `"status":200`) >= 2
	})
	if strings.Contains(string(logged), key) || strings.Count(string(logged), `"Authorization":["REDACTED"]`) < 2 {
		t.Fatalf("access log: want the key sent as a redacted Authorization header, and nowhere:\n%s", logged)
	}
}

// Caddy's access log records X-Api-Key whole and no module can redact it:
// qos_discovery warns the operator, once per configuration, when clients
// send their key that way; a key sent as Authorization: Bearer, which the
// access log redacts, warns nothing.
func TestXAPIKeyWarnedOnce(t *testing.T) {
	const key = "discovery-key-0123456789abcdef"
	httpAddr := testutil.FreeTCPAddr(t)
	c := testcaddy.StartLogged(t, fmt.Sprintf(`http://%s {
	qos_discovery {
		fleet f {
			server eu 1 127.0.0.1:9
		}
		api_keys %s
	}
}
`, httpAddr, key))
	url := "http://" + httpAddr + "/v1/fleets/f/servers"
	warnings := func() int {
		n := 0
		for _, e := range c.Logs(t) {
			if msg, _ := e["msg"].(string); strings.Contains(msg, "X-Api-Key") {
				n++
			}
		}
		return n
	}
	if r := request(t, "GET", url, "Authorization", "Bearer "+key); r.status != http.StatusOK {
		t.Fatalf("Authorization: Bearer: got %d, want 200", r.status)
	}
	if n := warnings(); n != 0 {
		t.Fatalf("after a key sent as Authorization: %d warnings, want none", n)
	}
	for range 3 {
		if r := request(t, "GET", url, "X-Api-Key", key); r.status != http.StatusOK {
			t.Fatalf("X-Api-Key: got %d, want 200", r.status)
		}
	}
	testutil.WaitFor(t, "the warning", func() bool { return warnings() > 0 })
	if n := warnings(); n != 1 {
		t.Fatalf("after three keys sent as X-Api-Key: %d warnings, want 1", n)
	}
}
