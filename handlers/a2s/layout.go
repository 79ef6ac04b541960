package a2s

import (
	"strings"

	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// LayoutNames are the values of the split_layout option of the A2S shield
// and game_query's a2s protocol: the names of wire/a2s's layouts, auto
// first.
var LayoutNames = func() []string {
	var names []string
	for l := wirea2s.LayoutAuto; l <= wirea2s.LayoutGoldSrc; l++ {
		names = append(names, l.String())
	}
	return names
}()

// ParseLayout returns the split layout named name, one of LayoutNames;
// "" (the option left out) is auto.
func ParseLayout(name string) (wirea2s.Layout, bool) {
	if name == "" {
		return wirea2s.LayoutAuto, true
	}
	for l := wirea2s.LayoutAuto; l <= wirea2s.LayoutGoldSrc; l++ {
		if l.String() == name {
			return l, true
		}
	}
	return wirea2s.LayoutAuto, false
}

// LayoutChoices lists LayoutNames as a sentence's choices: "a, b or c".
func LayoutChoices() string {
	n := len(LayoutNames)
	return strings.Join(LayoutNames[:n-1], ", ") + " or " + LayoutNames[n-1]
}
