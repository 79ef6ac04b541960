package benchutil

import (
	"slices"
	"strings"
	"testing"
)

// A p99 comparison divides the baseline's p99 by the target's, round by
// round; a round in which the target answered nothing (p99 0) is its worst
// ratio, 0, not a round left out.
func TestRatiosByP99(t *testing.T) {
	w := &Workload{ID: "w", Targets: []*Target{
		{Name: "bare", P99s: []float64{100, 100, 100}},
		{Name: "gg", P99s: []float64{50, 0, 200}},
	}}
	xs, err := w.Ratios(Comparison{Target: "gg", Baseline: "bare", Metric: P99})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{2, 0, 0.5}; !slices.Equal(xs, want) {
		t.Fatalf("ratios %v, want %v", xs, want)
	}
	w.Targets[1].P99s = w.Targets[1].P99s[:2]
	if _, err := w.Ratios(Comparison{Target: "gg", Baseline: "bare", Metric: P99}); err == nil || !strings.Contains(err.Error(), "gg has 2 rounds, bare 3") {
		t.Fatalf("rounds of different lengths: %v, want an error counting the p99s", err)
	}
}

// A rate comparison divides the target's rate by the baseline's, leaving
// out a round in which the baseline measured nothing.
func TestRatiosByRate(t *testing.T) {
	w := &Workload{ID: "w", Targets: []*Target{
		{Name: "bare", Rates: []float64{100, 0, 200}},
		{Name: "gg", Rates: []float64{150, 10, 100}},
	}}
	xs, err := w.Ratios(Comparison{Target: "gg", Baseline: "bare"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{1.5, 0.5}; !slices.Equal(xs, want) {
		t.Fatalf("ratios %v, want %v", xs, want)
	}
}

// A CPU comparison divides the baseline's CPU time per unit by the
// target's, leaving out a round where either measured none.
func TestRatiosByCPU(t *testing.T) {
	w := &Workload{ID: "w", Targets: []*Target{
		{Name: "coturn", CPUs: []float64{4, 4, 0, 4}},
		{Name: "gg", CPUs: []float64{5, 2, 3, 0}},
	}}
	xs, err := w.Ratios(Comparison{Target: "gg", Baseline: "coturn", Metric: CPU})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0.8, 2}; !slices.Equal(xs, want) {
		t.Fatalf("ratios %v, want %v", xs, want)
	}
}
