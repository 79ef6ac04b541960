package caddymodule

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4"

	_ "github.com/gamegate/gamegate"
)

// TestCaddyfileAdapt adapts every testdata/adapt/*.caddytest file: a
// Caddyfile, a line of dashes, then either the JSON it must adapt to or
// "error: <text>" naming the error it must fail with.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/adapt/*.caddytest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no adaptation test files (%v)", err)
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			caddyfile, expected, ok := strings.Cut(string(data), "----------")
			if !ok {
				t.Fatal("missing the ---------- separator")
			}
			expected = strings.TrimSpace(expected)
			got, _, err := adapter.Adapt([]byte(strings.TrimSpace(caddyfile)+"\n"), map[string]any{"filename": "Caddyfile"})
			if want, isErr := strings.CutPrefix(expected, "error:"); isErr {
				want = strings.TrimSpace(want)
				if err == nil {
					t.Fatalf("got a successful adaptation, want an error containing %q", want)
				}
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("got error %q, want one containing %q", err, want)
				}
				if name, ok := repeatsModuleName(err.Error()); ok {
					t.Fatalf("got error %q, want %s named once: Caddy already names it", err, name)
				}
				return
			}
			if err != nil {
				t.Fatalf("adapting: %v", err)
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, got, "", "\t"); err != nil {
				t.Fatal(err)
			}
			if buf.String() != expected {
				if os.Getenv("GAMEGATE_UPDATE_GOLDEN") != "" {
					if err := os.WriteFile(file, []byte(strings.TrimSpace(caddyfile)+"\n----------\n"+buf.String()+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Fatalf("adapted JSON differs.\ngot:\n%s\nwant:\n%s", buf.String(), expected)
			}
		})
	}
}
