package benchutil

import "fmt"

// Workload is what one workload measured: its targets, each measured once
// per round in the same rounds, and the comparisons between them that the
// benchmark page reports. The load programs build one; bench/run renders
// them all into BENCHMARKS.md and a chart each.
type Workload struct {
	// ID names the workload's section anchor and chart file (a-z, 0-9, -).
	ID string
	// Title is the section's heading.
	Title string
	// About says what is measured and how, for the page (Markdown).
	About string
	// Command reruns this workload alone.
	Command string
	// Unit of Target.Rates ("responses/s").
	Unit string
	// Targets in the order measured in the first round.
	Targets []*Target
	// Comparisons are the ratios reported, each a target's rate over
	// another's of the same round.
	Comparisons []Comparison
	// Loads is the load average (1 min) before the first round and after
	// each.
	Loads []string
	// Notes are remarks printed under the tables (Markdown).
	Notes []string
}

// Target is one thing measured: a server path or a baseline.
type Target struct {
	// Name is short and unique in its workload; Label describes it.
	Name, Label string
	// Rates has one figure (in the workload's unit) per round.
	Rates []float64
	// P50 and P99 are latency percentiles over every round, in
	// microseconds; zero when not measured.
	P50, P99 float64
	// P99s has the p99 of each round, in microseconds, where comparisons
	// by latency need it.
	P99s []float64
	// CPUs has the server's CPU time per unit of Rates (per message,
	// per response) in each round, in microseconds, where comparisons by
	// CPU need it.
	CPUs []float64
	// Extra is one more figure worth showing (lost datagrams, CPU per
	// message), or empty.
	Extra string
}

// Comparison is one target's rate over another's (its baseline), round by
// round; or, by P99, the baseline's p99 over the target's (above 1: the
// target's is lower), for loads where the rate is fixed; or, by CPU, the
// baseline's CPU time per unit over the target's (above 1: the target's
// is lower).
type Comparison struct {
	Target, Baseline string
	// Goal is the ratio aimed at, or zero for none.
	Goal float64
	// Metric is Rate (the zero value), P99 or CPU.
	Metric Metric
}

// Metric is what a comparison divides.
type Metric int

// Metrics of a comparison.
const (
	Rate Metric = iota // the target's rate over the baseline's
	P99                // the baseline's p99 over the target's
	CPU                // the baseline's CPU time per unit over the target's
)

// Target returns the workload's target of that name, or nil.
func (w *Workload) Target(name string) *Target {
	for _, t := range w.Targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Ratios returns c's target's rate over its baseline's, round by round.
func (w *Workload) Ratios(c Comparison) ([]float64, error) {
	t, b := w.Target(c.Target), w.Target(c.Baseline)
	if t == nil || b == nil {
		return nil, fmt.Errorf("%s: comparison %s/%s names an unknown target", w.ID, c.Target, c.Baseline)
	}
	tx, bx := t.Rates, b.Rates
	switch c.Metric {
	case P99:
		tx, bx = t.P99s, b.P99s
	case CPU:
		tx, bx = t.CPUs, b.CPUs
	}
	if len(tx) != len(bx) {
		return nil, fmt.Errorf("%s: %s has %d rounds, %s %d", w.ID, t.Name, len(tx), b.Name, len(bx))
	}
	xs := make([]float64, 0, len(tx))
	for i := range tx {
		switch {
		case c.Metric == Rate && bx[i] > 0:
			xs = append(xs, tx[i]/bx[i])
		case c.Metric == P99 && tx[i] <= 0:
			// The target answered nothing in the round: the worst ratio,
			// not a round left out.
			xs = append(xs, 0)
		case c.Metric != Rate && tx[i] > 0 && bx[i] > 0:
			xs = append(xs, bx[i]/tx[i])
		}
	}
	return xs, nil
}
