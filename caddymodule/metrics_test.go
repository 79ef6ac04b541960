package caddymodule

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

type testOutcome uint8

const (
	testOutcomeA testOutcome = iota
	testOutcomeB
	numTestOutcomes
)

func (o testOutcome) String() string { return [...]string{"a", "b"}[o] }

func TestEnumCountersCountUnderEachValuesLabel(t *testing.T) {
	c := newEnumCounters("test", "things_total", "Things, by outcome.", "outcome", numTestOutcomes)
	c.count(testOutcomeB)
	c.count(testOutcomeB)
	c.count(testOutcomeA)
	if allocs := testing.AllocsPerRun(100, func() { c.count(testOutcomeA) }); allocs != 0 {
		t.Errorf("count allocates %v times, want 0", allocs)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(c.vec)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "gamegate_test_things_total" || mfs[0].GetHelp() != "Things, by outcome." {
		t.Fatalf("gathered %v, want one family gamegate_test_things_total", mfs)
	}
	got := map[string]float64{}
	for _, m := range mfs[0].GetMetric() {
		if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "outcome" {
			t.Fatalf("labels %v, want one named outcome", m.GetLabel())
		}
		got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	// Every value is there from the start, counted or not; a has 1 + 101
	// (AllocsPerRun runs the function once more than asked).
	if len(got) != 2 || got["a"] != 102 || got["b"] != 2 {
		t.Errorf("counts %v, want a=102 b=2", got)
	}
}
