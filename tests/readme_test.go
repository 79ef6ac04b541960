package tests

import (
	"os"
	"regexp"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// Every Caddyfile snippet in the README must adapt: the documentation is
// configuration users copy.
func TestReadmeCaddyfilesAdapt(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```caddyfile\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d Caddyfile snippets in the README, want at least 5", len(blocks))
	}
	for i, b := range blocks {
		if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(b[1], map[string]any{"filename": "README"}); err != nil {
			t.Errorf("README snippet %d does not adapt: %v\n%s", i+1, err, b[1])
		}
	}
}
