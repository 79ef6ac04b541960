package tests

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// The storage redis pages' Caddyfile and JSON snippets load and validate
// (as `gamegate validate` does: every module provisioned), so that what
// users copy works. The storage connects only when used, so no Redis is
// needed.
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
			var c caddy.Config
			if err := json.Unmarshal(cfg, &c); err != nil {
				t.Fatalf("%s: %v\n%s", page, err, cfg)
			}
			if err := caddy.Validate(&c); err != nil {
				t.Fatalf("%s: a snippet does not validate: %v\n%s", page, err, cfg)
			}
		}
	}
}
