// Package testcaddy runs a real Caddy in the test process from a Caddyfile,
// reloads it, and reads its metrics. It is apart from testutil so that tests
// which do not need Caddy do not link it.
package testcaddy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/gamegate/gamegate/internal/testutil"
)

// Caddy is a Caddy instance running in the test process from a Caddyfile.
// Caddy is process-global: tests using it must not run in parallel.
type Caddy struct {
	// AdminAddr is the admin API's host:port on loopback.
	AdminAddr string
	// logFile, when set (StartLogged), receives Caddy's logs from level
	// INFO, as JSON lines.
	logFile string
}

// Start adapts caddyfile, points the admin API at a free loopback port,
// turns off config persistence, loads the config and stops Caddy when the test
// ends. Set GAMEGATE_TEST_LOG=1 to see Caddy's logs.
func Start(t testing.TB, caddyfile string) *Caddy {
	t.Helper()
	c := &Caddy{AdminAddr: testutil.FreeTCPAddr(t)}
	c.Load(t, caddyfile)
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stopping caddy: %v", err)
		}
		closeIdleHTTP()
	})
	return c
}

// StartLogged is Start with Caddy's logs from level INFO written, as JSON,
// to a file that Logs reads.
func StartLogged(t testing.TB, caddyfile string) *Caddy {
	t.Helper()
	c := &Caddy{AdminAddr: testutil.FreeTCPAddr(t), logFile: filepath.Join(t.TempDir(), "caddy.log")}
	c.Load(t, caddyfile)
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stopping caddy: %v", err)
		}
		closeIdleHTTP()
	})
	return c
}

// Logs returns the entries Caddy has logged so far (StartLogged only), each
// a JSON object: "level", "logger", "msg" and the entry's fields.
func (c *Caddy) Logs(t testing.TB) []map[string]any {
	t.Helper()
	if c.logFile == "" {
		t.Fatal("Logs needs a Caddy from StartLogged")
	}
	raw, err := os.ReadFile(c.logFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var entries []map[string]any
	for line := range strings.SplitSeq(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		entries = append(entries, e)
	}
	return entries
}

// Load replaces the running configuration with caddyfile (a reload), and
// returns once the previous configuration's sockets are closed (see
// waitSocketsSettled) and the default HTTP transport holds no connection to
// them, so what the test sends next reaches the new configuration.
func (c *Caddy) Load(t testing.TB, caddyfile string) {
	t.Helper()
	raw := c.config(t, caddyfile)
	before, err := listeningSockets()
	if err != nil {
		t.Fatalf("reading this process's sockets: %v", err)
	}
	if err := caddy.Load(raw, true); err != nil {
		t.Fatalf("loading config: %v\n%s", err, raw)
	}
	waitSocketsSettled(t, before)
	closeIdleHTTP()
}

// LoadFailing tries to replace the running configuration with caddyfile,
// which Caddy must refuse (while provisioning it, say), and returns Caddy's
// error; the running configuration stays. It fails the test if caddyfile
// loaded.
func (c *Caddy) LoadFailing(t testing.TB, caddyfile string) error {
	t.Helper()
	err := caddy.Load(c.config(t, caddyfile), true)
	if err == nil {
		t.Fatal("the configuration loaded; it was to be refused")
	}
	return err
}

// config is caddyfile as the JSON configuration Load gives Caddy: the
// admin API on AdminAddr, not persisted, and logs at ERROR unless
// GAMEGATE_TEST_LOG is set (to a file from INFO for StartLogged).
func (c *Caddy) config(t testing.TB, caddyfile string) []byte {
	t.Helper()
	cfg := AdaptCaddyfile(t, caddyfile)
	cfg["admin"] = map[string]any{
		"listen": c.AdminAddr,
		"config": map[string]any{"persist": false},
	}
	// The default log is set; the configuration's own logs (a site's
	// access log) stay.
	var defaultLog map[string]any
	if c.logFile != "" {
		defaultLog = map[string]any{
			"level":   "INFO",
			"writer":  map[string]any{"output": "file", "filename": c.logFile, "roll": false},
			"encoder": map[string]any{"format": "json"},
		}
	} else if os.Getenv("GAMEGATE_TEST_LOG") == "" {
		defaultLog = map[string]any{"level": "ERROR"}
	}
	if defaultLog != nil {
		logging, _ := cfg["logging"].(map[string]any)
		if logging == nil {
			logging = map[string]any{}
			cfg["logging"] = logging
		}
		logs, _ := logging["logs"].(map[string]any)
		if logs == nil {
			logs = map[string]any{}
			logging["logs"] = logs
		}
		if existing, ok := logs["default"].(map[string]any); ok {
			for k, v := range defaultLog {
				existing[k] = v // keeping what it excludes (the access logs)
			}
		} else {
			logs["default"] = defaultLog
		}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// closeIdleHTTP drops the default transport's idle connections: after a
// reload they lead to the old servers, which close them, and a request that
// is not idempotent (PUT, POST) sent on one as it closes fails instead of
// being retried.
func closeIdleHTTP() {
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}

// AdaptCaddyfile adapts a Caddyfile to Caddy's JSON config.
func AdaptCaddyfile(t testing.TB, caddyfile string) map[string]any {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	if adapter == nil {
		t.Fatal("the caddyfile adapter is not registered")
	}
	raw, warnings, err := adapter.Adapt([]byte(caddyfile), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatalf("adapting Caddyfile: %v\n%s", err, caddyfile)
	}
	for _, w := range warnings {
		t.Logf("Caddyfile warning: %s", w.String())
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Metric returns the value of the sample of the admin API's /metrics named
// exactly series, labels included (e.g. `gamegate_qos_bans_total{cause="rate"}`,
// labels in the order Prometheus writes them), and whether it was found.
func (c *Caddy) Metric(t testing.TB, series string) (float64, bool) {
	t.Helper()
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + c.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series); ok && strings.HasPrefix(rest, " ") {
			var v float64
			if _, err := fmt.Sscan(strings.TrimSpace(rest), &v); err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return v, true
		}
	}
	return 0, false
}

// MustMetric is Metric for a sample that must exist. Counters are
// process-wide (they survive configuration reloads), so tests compare a
// counter before and after what they do, never its absolute value.
func (c *Caddy) MustMetric(t testing.TB, series string) float64 {
	t.Helper()
	v, ok := c.Metric(t, series)
	if !ok {
		t.Fatalf("metric %s not found", series)
	}
	return v
}
