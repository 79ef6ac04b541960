package caddyrelay

import "testing"

// A loss shows, however small: 4 of 68,659 once printed as "0.0%".
func TestLossPercent(t *testing.T) {
	for _, tc := range []struct {
		lost, sent int
		want       string
	}{
		{0, 0, "0.0%"},
		{0, 100, "0.0%"},
		{4, 68659, "0.0058%"},
		{8, 91787, "0.0087%"},
		{1, 1000, "0.1%"},
		{1, 3, "33.3%"},
		{5, 5, "100.0%"},
	} {
		if got := lossPercent(tc.lost, tc.sent); got != tc.want {
			t.Errorf("lossPercent(%d, %d): got %q, want %q", tc.lost, tc.sent, got, tc.want)
		}
	}
}
