package caddymodule

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Every gamegate metric is named on a page under docs/ (each module's page
// lists its metrics), so users find what they scrape.
func TestMetricsDocumented(t *testing.T) {
	var docs strings.Builder
	err := filepath.WalkDir("../docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		b, err := os.ReadFile(path)
		docs.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range gamegateCollectors() {
		ch := make(chan *prometheus.Desc)
		go func() {
			c.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the metric's name from %s", d)
			}
			n++
			if !strings.Contains(docs.String(), "`"+m[1]) {
				t.Errorf("metric %s is named on no page under docs/", m[1])
			}
		}
	}
	if n < 30 {
		t.Errorf("found %d metrics, want at least 30", n)
	}
}
