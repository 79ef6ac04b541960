package a2s

import (
	"strings"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

func TestParseLayout(t *testing.T) {
	for _, c := range []struct {
		name string
		want wirea2s.Layout
		ok   bool
	}{
		{"", wirea2s.LayoutAuto, true},
		{"auto", wirea2s.LayoutAuto, true},
		{"source", wirea2s.LayoutSource, true},
		{"source_no_size", wirea2s.LayoutSourceNoSize, true},
		{"goldsrc", wirea2s.LayoutGoldSrc, true},
		{"unknown", wirea2s.LayoutAuto, false},
		{"Source", wirea2s.LayoutAuto, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := ParseLayout(c.name); got != c.want || ok != c.ok {
				t.Errorf("ParseLayout(%q) = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
			}
		})
	}
	if got, want := LayoutChoices(), "auto, source, source_no_size or goldsrc"; got != want {
		t.Errorf("LayoutChoices() = %q, want %q", got, want)
	}
}

// game_query's a2s protocol accepts the longest attempt_timeout and
// refuses one past it by name (the shield's and GQP's bounds are their
// handlers': TestShieldWaitsAtTheBound, gqp.TestResponderWaitsAtTheBound).
func TestConfigWaitsAtItsBounds(t *testing.T) {
	longest := duration.Duration(query.MaxAttemptTimeout)
	c := Config{Attempts: query.Attempts{AttemptTimeout: longest, Retries: query.MaxRetries}}
	if err := c.Validate(); err != nil {
		t.Fatalf("at the bounds (attempt_timeout %s, retries %d): %v", longest.Std(), query.MaxRetries, err)
	}
	c = Config{Attempts: query.Attempts{AttemptTimeout: longest + 1}}
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "attempt_timeout must be a duration in [") {
		t.Fatalf("got %v, want an error naming attempt_timeout and its range", err)
	}
	c = Config{SplitLayout: "x"}
	if err := c.Validate(); err == nil || err.Error() != `split_layout: want auto, source, source_no_size or goldsrc, got "x"` {
		t.Fatalf("split_layout x: got %v, want the layouts named", err)
	}
}
