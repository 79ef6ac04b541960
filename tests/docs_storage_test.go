package tests

import (
	"os"
	"regexp"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// The storage redis pages' Caddyfile and JSON snippets load and validate
// (as `gamegate validate` does: every module provisioned), so that what
// users copy works. The storage tries its server when provisioned:
// validateDoc points it at a closed loopback port, which it logs and
// starts without.
func TestStorageDocsSnippetsValidate(t *testing.T) {
	for _, page := range []string{"../docs/storage/redis.md", "../docs/scale.md"} {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		var configs [][]byte
		for _, b := range regexp.MustCompile("(?s)```caddyfile\n(.*?)```").FindAllSubmatch(doc, -1) {
			cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(b[1], map[string]any{"filename": page})
			if err != nil {
				t.Fatalf("%s: a Caddyfile snippet does not adapt: %v\n%s", page, err, b[1])
			}
			configs = append(configs, cfg)
		}
		for _, b := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1) {
			configs = append(configs, b[1])
		}
		for _, cfg := range configs {
			if err := validateDoc(t, cfg); err != nil {
				t.Fatalf("%s: a snippet does not validate: %v\n%s", page, err, cfg)
			}
		}
	}
}
