package caddyglue

import (
	"maps"
	"strings"
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
	c := NewEnumCounters(&MetricSet{Subsystem: "test"}, "things_total", "Things, by outcome.", "outcome", numTestOutcomes)
	c.Count(testOutcomeB)
	c.Count(testOutcomeB)
	c.Count(testOutcomeA)
	if allocs := testing.AllocsPerRun(100, func() { c.Count(testOutcomeA) }); allocs != 0 {
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

// gather returns the registry's samples as series → value, the series
// written as testcaddy's Metric takes them.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			series := mf.GetName()
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
				}
				series += "{" + strings.Join(ls, ",") + "}"
			}
			if c := m.GetCounter(); c != nil {
				got[series] = c.GetValue()
			} else {
				got[series] = m.GetGauge().GetValue()
			}
		}
	}
	return got
}

// A metric set is process-wide and every configuration registers it in its
// own registry (Caddy makes one per configuration): registering it again in
// the same registry (two handlers) is not an error, a reload's new registry
// shows the counts so far, and nothing is counted twice.
func TestMetricSetRegistersInEveryConfiguration(t *testing.T) {
	s := &MetricSet{Subsystem: "test"}
	things := s.Counter("things_total", "Things.")
	kinds := s.CounterVec("kinds_total", "Things, by kind.", "kind")
	codes := s.CodeCounters("answers_total", "Answers, by status code.", 200)
	outcomes := NewEnumCounters(s, "outcomes_total", "Things, by outcome.", "outcome", numTestOutcomes)
	s.GaugeFunc("live", "Live things.", func() float64 { return 7 })
	scraped := s.Desc("scraped_total", "Things counted elsewhere, by kind.", "kind")
	s.Scraped(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(scraped, prometheus.CounterValue, 5, "x")
	}, scraped)

	first := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := s.Register(first); err != nil {
			t.Fatalf("registering in the first configuration: %v", err)
		}
	}
	things.Inc()
	kinds.WithLabelValues("k").Inc()
	codes.Count(200)
	codes.Count(404)
	outcomes.Count(testOutcomeB)

	reloaded := prometheus.NewPedanticRegistry()
	if err := s.Register(reloaded); err != nil {
		t.Fatalf("registering in the reloaded configuration: %v", err)
	}
	things.Inc()
	want := map[string]float64{
		"gamegate_test_things_total":                2,
		`gamegate_test_kinds_total{kind="k"}`:       1,
		`gamegate_test_answers_total{code="200"}`:   1,
		`gamegate_test_answers_total{code="404"}`:   1,
		`gamegate_test_outcomes_total{outcome="a"}`: 0,
		`gamegate_test_outcomes_total{outcome="b"}`: 1,
		"gamegate_test_live":                        7,
		`gamegate_test_scraped_total{kind="x"}`:     5,
	}
	for name, reg := range map[string]*prometheus.Registry{"first": first, "reloaded": reloaded} {
		if got := gather(t, reg); !maps.Equal(got, want) {
			t.Errorf("%s configuration: gathered %v, want %v", name, got, want)
		}
	}

	// Another metric under a registered name is a conflict, not skipped.
	other := &MetricSet{Subsystem: "test"}
	other.Counter("things_total", "Other things.")
	if err := other.Register(reloaded); err == nil {
		t.Error("registering a different metric under a registered name: no error, want one")
	}
}

// A value added by two configurations (a reload adopting a pooled table)
// counts once, and stays live until both remove it.
func TestLiveSetSumsEachLiveValueOnce(t *testing.T) {
	var s LiveSet[*int]
	a, b := new(3), new(4)
	s.Add(a)
	s.Add(a)
	s.Add(b)
	value := func(p *int) int { return *p }
	if got := s.Sum(value); got != 7 {
		t.Fatalf("sum of a (added twice) and b: got %d, want 7", got)
	}
	s.Remove(a)
	s.Remove(b)
	if got := s.Sum(value); got != 3 {
		t.Fatalf("sum after removing a once and b: got %d, want 3", got)
	}
	s.Remove(a)
	if got := s.Sum(value); got != 0 {
		t.Fatalf("sum after removing a twice: got %d, want 0", got)
	}
}
