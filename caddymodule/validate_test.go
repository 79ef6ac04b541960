package caddymodule

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// runValidate runs `gamegate validate` on a configuration file, JSON when
// adapter is "", and returns its output, with the messages of its JSON log
// lines decoded.
func runValidate(bin, config, adapter string) (string, error) {
	out, err := exec.Command(bin, "validate", "--config", config, "--adapter", adapter).CombinedOutput()
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
// command on every testdata/invalid/*.jsontest file (a JSON configuration)
// and *.caddytest file (a Caddyfile): the configuration, a line of dashes,
// then "error: <text>", which the error message must contain (it names the
// field). Each must be refused (a non-zero exit) without a panic.
// testdata/valid.json, which uses every module, must be accepted, so that
// the refusals are the invalid values' doing.
func TestValidateRefusesInvalidJSON(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.jsontest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid configurations (%v)", err)
	}
	caddyfiles, err := filepath.Glob("testdata/invalid/*.caddytest")
	if err != nil || len(caddyfiles) == 0 {
		t.Fatalf("no invalid Caddyfiles (%v)", err)
	}
	files = append(files, caddyfiles...)
	bin := testutil.BuildGamegate(t)
	dir := t.TempDir()

	if out, err := runValidate(bin, "testdata/valid.json", ""); err != nil {
		t.Fatalf("testdata/valid.json: got %v, want it accepted:\n%s", err, out)
	}
	for _, file := range files {
		name, ext, adapter := filepath.Base(file), ".json", ""
		if n, ok := strings.CutSuffix(name, ".caddytest"); ok {
			name, ext, adapter = n+"_caddyfile", ".caddyfile", "caddyfile"
		}
		name = strings.TrimSuffix(name, ".jsontest")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			config, want, ok := strings.Cut(string(data), "----------")
			want, isErr := strings.CutPrefix(strings.TrimSpace(want), "error:")
			if !ok || !isErr {
				t.Fatal("want a configuration, a ---------- line, then error: <text>")
			}
			want = strings.TrimSpace(want)
			path := filepath.Join(dir, name+ext)
			if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runValidate(bin, path, adapter)
			if _, exited := err.(*exec.ExitError); !exited {
				t.Fatalf("got %v, want a non-zero exit:\n%s", err, out)
			}
			if strings.Contains(out, "panic") {
				t.Fatalf("validate panicked:\n%s", out)
			}
			if !strings.Contains(out, want) {
				t.Fatalf("got:\n%s\nwant an error containing %q", out, want)
			}
			if name, ok := repeatsModuleName(out); ok {
				t.Fatalf("got:\n%s\nwant %s named once: Caddy already names it", out, name)
			}
		})
	}
}

// callerNamed is where Caddy names a module before the module's own error:
// a Caddyfile directive or global option ("parsing caddyfile tokens for
// 'game_query': "), a module's Provision ("provision
// http.handlers.game_query: ") and an app's Start ("gamegate app module:
// start: "); then the word the module's error starts with.
var callerNamed = regexp.MustCompile(`(?:tokens for '|provision (?:[a-z0-9_]+\.)*)([a-z0-9_]+)'?: ([a-z0-9_]+):|\b([a-z0-9_]+) app module: start: ([a-z0-9_]+):`)

// repeatsModuleName reports whether an error names its module again right
// after Caddy has named it ("… for 'game_query': game_query: …").
func repeatsModuleName(msg string) (string, bool) {
	for _, m := range callerNamed.FindAllStringSubmatch(msg, -1) {
		if m[1] != "" && m[1] == m[2] {
			return m[1], true
		}
		if m[3] != "" && m[3] == m[4] {
			return m[3], true
		}
	}
	return "", false
}

func TestRepeatsModuleName(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"parsing caddyfile tokens for 'game_query': game_query: duplicate ttl for 'status', at Caddyfile:3", true},
		{"parsing caddyfile tokens for 'game_query': duplicate ttl for 'status', at Caddyfile:3", false},
		{"parsing caddyfile tokens for 'game_query': quake3: unrecognized option 'frob', at Caddyfile:4", false},
		{"parsing caddyfile tokens for 'gamegate': qos: unrecognized option 'frob', at Caddyfile:6", false},
		{"loading gamegate app module: provision gamegate: gamegate: udp[1]: listen is required", true},
		{"loading gamegate app module: provision gamegate: udp[1]: listen is required", false},
		{"provision http.handlers.game_query: game_query: default_ttl must be a duration", true},
		{"provision http.handlers.game_query: default_ttl must be a duration", false},
		{"gamegate app module: start: gamegate: listening on udp/127.0.0.1:9000: in use", true},
		{"gamegate app module: start: listening on udp/127.0.0.1:9000: in use", false},
	} {
		if _, got := repeatsModuleName(tc.msg); got != tc.want {
			t.Errorf("repeatsModuleName(%q): got %v, want %v", tc.msg, got, tc.want)
		}
	}
}
