package caddymodule

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/internal/testutil"
)

// runValidate runs `gamegate validate` on a JSON configuration file and
// returns its output, with the messages of its JSON log lines decoded.
func runValidate(bin, config string) (string, error) {
	out, err := exec.Command(bin, "validate", "--config", config, "--adapter", "").CombinedOutput()
	var text strings.Builder
	for line := range strings.Lines(string(out)) {
		var entry struct{ Msg, Error string }
		if json.Unmarshal([]byte(line), &entry) == nil {
			line = entry.Msg + " " + entry.Error + "\n"
		}
		text.WriteString(line)
	}
	return text.String(), err
}

// TestValidateRefusesInvalidJSON runs the gamegate binary's validate
// command on every testdata/invalid/*.jsontest file: a JSON configuration,
// a line of dashes, then "error: <text>", which the error message must
// contain (it names the field). Each must be refused (a non-zero exit)
// without a panic. testdata/valid.json, which uses every module, must be
// accepted, so that the refusals are the invalid values' doing.
func TestValidateRefusesInvalidJSON(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.jsontest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid configurations (%v)", err)
	}
	bin := testutil.BuildGamegate(t)
	dir := t.TempDir()

	if out, err := runValidate(bin, "testdata/valid.json"); err != nil {
		t.Fatalf("testdata/valid.json: got %v, want it accepted:\n%s", err, out)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsontest")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			config, want, ok := strings.Cut(string(data), "----------")
			want, isErr := strings.CutPrefix(strings.TrimSpace(want), "error:")
			if !ok || !isErr {
				t.Fatal("want a JSON configuration, a ---------- line, then error: <text>")
			}
			want = strings.TrimSpace(want)
			path := filepath.Join(dir, name+".json")
			if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runValidate(bin, path)
			if _, exited := err.(*exec.ExitError); !exited {
				t.Fatalf("got %v, want a non-zero exit:\n%s", err, out)
			}
			if strings.Contains(out, "panic") {
				t.Fatalf("validate panicked:\n%s", out)
			}
			if !strings.Contains(out, want) {
				t.Fatalf("got:\n%s\nwant an error containing %q", out, want)
			}
		})
	}
}

// Every upstream_timeout and retries Validate accepts gives the A2S shield
// a positive wait for an answer (attempts × upstream_timeout and a second),
// and GQP's is accepted (gqp.TestResponderWaitsAtTheBound); past the bound Validate refuses the
// option by name, before any wait could overflow to a negative duration.
func TestUpstreamWaitsAtTheirBounds(t *testing.T) {
	longest := caddy.Duration(timeoutRange.hi)
	shield := &A2SShield{Upstream: "127.0.0.1:27015", UpstreamTimeout: longest, Retries: 10}
	if err := shield.Validate(); err != nil {
		t.Fatalf("a2s_shield at the bounds (upstream_timeout %s, retries 10): %v", fmtDuration(longest), err)
	}
	if got, want := shield.loadTimeout(), 11*time.Hour+time.Second; got != want {
		t.Errorf("a2s_shield at the bounds: wait for an answer %v, want %v", got, want)
	}
	gqp := &GQPResponder{UpstreamTimeout: longest}
	if err := gqp.Validate(); err != nil {
		t.Fatalf("gqp at the bound (upstream_timeout %s): %v", fmtDuration(longest), err)
	}

	for _, tc := range []struct {
		name  string
		check func() error
		field string
	}{
		{"a2s_shield upstream_timeout", (&A2SShield{Upstream: "127.0.0.1:27015", UpstreamTimeout: caddy.Duration(1_000_000 * time.Hour), Retries: 2}).Validate, "upstream_timeout"},
		{"a2s_shield one past the bound", (&A2SShield{Upstream: "127.0.0.1:27015", UpstreamTimeout: longest + 1}).Validate, "upstream_timeout"},
		{"a2s_shield ttl", (&A2SShield{Upstream: "127.0.0.1:27015", TTL: caddy.Duration(ttlRange.hi + 1)}).Validate, "ttl"},
		{"a2s_shield negative_ttl", (&A2SShield{Upstream: "127.0.0.1:27015", NegativeTTL: -1}).Validate, "negative_ttl"},
		{"a2s attempt_timeout", (&QueryA2S{attemptOptions: attemptOptions{AttemptTimeout: longest + 1}}).Validate, "attempt_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			if err == nil || !strings.HasPrefix(strings.TrimPrefix(err.Error(), tc.name[:strings.Index(tc.name, " ")]+": "), tc.field+" must be a duration in [") {
				t.Fatalf("got %v, want an error naming %s and its range", err, tc.field)
			}
		})
	}
}
