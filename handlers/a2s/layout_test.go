package a2s

import (
	"testing"

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
