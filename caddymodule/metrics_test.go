package caddymodule

import (
	"maps"
	"regexp"
	"slices"
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
	c := newEnumCounters(&metricSet{subsystem: "test"}, "things_total", "Things, by outcome.", "outcome", numTestOutcomes)
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
	s := &metricSet{subsystem: "test"}
	things := s.counter("things_total", "Things.")
	kinds := s.counterVec("kinds_total", "Things, by kind.", "kind")
	codes := s.codeCounters("answers_total", "Answers, by status code.", 200)
	outcomes := newEnumCounters(s, "outcomes_total", "Things, by outcome.", "outcome", numTestOutcomes)
	s.gaugeFunc("live", "Live things.", func() float64 { return 7 })
	scraped := s.desc("scraped_total", "Things counted elsewhere, by kind.", "kind")
	s.scraped(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(scraped, prometheus.CounterValue, 5, "x")
	}, scraped)

	first := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := s.register(first); err != nil {
			t.Fatalf("registering in the first configuration: %v", err)
		}
	}
	things.Inc()
	kinds.WithLabelValues("k").Inc()
	codes.count(200)
	codes.count(404)
	outcomes.count(testOutcomeB)

	reloaded := prometheus.NewPedanticRegistry()
	if err := s.register(reloaded); err != nil {
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
	other := &metricSet{subsystem: "test"}
	other.counter("things_total", "Other things.")
	if err := other.register(reloaded); err == nil {
		t.Error("registering a different metric under a registered name: no error, want one")
	}
}

// TestMetricDescriptions pins every gamegate metric's name, help text and
// labels: they are what users scrape, graph and alert on, so this list
// changes only on purpose. All of them register together in a pedantic
// registry (as Caddy's are) and are gathered, which also checks that the
// collectors computed when scraped send what they describe.
func TestMetricDescriptions(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	var got []string
	for _, c := range gamegateCollectors() {
		if err := reg.Register(c); err != nil {
			t.Fatalf("registering every gamegate collector in one registry: %v", err)
		}
		ch := make(chan *prometheus.Desc)
		go func() {
			c.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			got = append(got, describe(d))
		}
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gathering every gamegate metric: %v", err)
	}
	slices.Sort(got)
	want := strings.Split(strings.TrimSpace(metricDescriptions), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("metric descriptions changed; got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// describe writes d as name{labels} "help".
func describe(d *prometheus.Desc) string {
	m := descPattern.FindStringSubmatch(d.String())
	if m == nil {
		return d.String() // a unit or constant labels: not used by gamegate
	}
	return m[1] + "{" + m[3] + "} " + m[2]
}

var descPattern = regexp.MustCompile(`^Desc\{fqName: "(.*)", help: (".*"), unit: "", constLabels: \{\}, variableLabels: \{(.*)\}\}$`)

const metricDescriptions = `
gamegate_a2s_shield_answer_bytes_total{} "Bytes of answers the shield sent to sources that passed their challenge."
gamegate_a2s_shield_requests_dropped_busy_total{} "Validated A2S requests dropped because the queue of requests waiting for the game server was full."
gamegate_a2s_shield_requests_total{outcome} "A2S requests handled by the shield, by outcome."
gamegate_a2s_shield_upstream_queries_total{} "Queries the shield sent to game servers."
gamegate_discovery_fleet_requests_total{fleet} "Discovery requests answered with a fleet's servers (200 or 304), by fleet id."
gamegate_discovery_fleets_file_errors_total{name} "Changes to a fleets file that could not be loaded (the last good list stays in service), by handler name."
gamegate_discovery_fleets_file_loads_total{name} "Fleets files loaded successfully after a change, by handler name."
gamegate_discovery_fleets_file_ok{name} "1 if the fleets file was last loaded successfully, 0 if not, by handler name."
gamegate_discovery_requests_total{code} "Discovery requests answered, by status code."
gamegate_discovery_withheld_servers{} "QoS servers failing their health checks, once per fleet listing them (a fleet whose servers all fail is still served whole)."
gamegate_freeciv_guard_connections_total{} "Freeciv connections checked by the guard."
gamegate_freeciv_guard_violations_total{reason} "Freeciv connections closed by the guard, by reason (framing, first_packet, rate)."
gamegate_game_query_requests_total{code} "Game query HTTP requests answered, by status code."
gamegate_game_query_upstream_queries_total{server} "Queries sent to game servers (after caching and coalescing), by configured server name (ad_hoc for ad-hoc targets)."
gamegate_game_query_upstream_query_duration_seconds{server} "How long queries to game servers took, answered or not, in seconds, by configured server name (ad_hoc for ad-hoc targets)."
gamegate_gqp_dropped_total{reason} "GQP queries the responder dropped before answering, and answer datagrams it could not send, by reason (queue_full, unvalidated, too_large, write_failed, stopped)."
gamegate_gqp_queries_total{outcome} "GQP queries handled by the responder, by outcome."
gamegate_master_challenges{} "Getinfo challenges waiting for an answer."
gamegate_master_datagrams_total{verdict} "Datagrams handled by the master servers, by verdict."
gamegate_master_sent_bytes_total{} "Bytes the master servers sent, UDP payload."
gamegate_master_sent_datagrams_total{} "Datagrams the master servers sent (getinfo challenges and list answers)."
gamegate_master_servers{} "Game servers listed by the master servers."
gamegate_master_shared_store_failures_total{} "Exchanges with the shared store (storage redis) that failed: while they do, this node lists its own registrations and those it read last."
gamegate_qos_bans_total{listener,cause} "QoS sources banned, by listener and cause (rate, capacity)."
gamegate_qos_dropped_total{listener,reason} "QoS datagrams dropped without a response, by listener and reason."
gamegate_qos_requests_total{listener} "Datagrams received by QoS echo handlers, by listener."
gamegate_qos_responses_total{listener,flow} "QoS responses sent, by listener and flow control (none, backoff, ban)."
gamegate_qos_tracked_sources{} "Sources whose QoS rate and ban state is remembered."
gamegate_relay_allocations_total{} "Relay allocations handed out by the allocations API (/v1/allocate and /v1/join)."
gamegate_relay_api_local_limit_decisions_total{limit} "Relay allocations API limit decisions taken by this node alone because the shared store could not take them, by limit (rate, allocations)."
gamegate_relay_api_requests_total{endpoint,code} "Relay allocations API requests answered, by endpoint and status code."
gamegate_relay_bindings{} "Live relay bindings (allocations bound to a client address)."
gamegate_relay_datagrams_total{outcome} "Relay datagrams handled, by outcome (relayed, bound, pinged, error_sent, dropped reasons, …)."
gamegate_relay_join_codes_total{} "Join codes created by the allocations API."
gamegate_udp_datagrams_total{listener} "Datagrams read by gamegate's UDP servers, by listener (the udp block's addresses as configured)."
gamegate_udp_dropped_total{listener,reason} "Datagrams gamegate's UDP servers dropped themselves, by listener and reason (no_protocol, too_large, write_failed); protocols count their own drops."
`

// gamegateCollectors returns the collectors of every gamegate metric set.
func gamegateCollectors() []prometheus.Collector {
	var cs []prometheus.Collector
	for _, s := range []*metricSet{
		&qosMetrics.metricSet, &relayMetrics.metricSet, &relayAPIMetrics.metricSet, &gqpMetrics.metricSet,
		&a2sShieldMetrics.metricSet, &freecivMetrics.metricSet, &discoveryMetrics.metricSet,
		&gameQueryMetrics.metricSet, &masterMetrics.metricSet, udpMetrics,
	} {
		cs = append(cs, s.collectors...)
	}
	return cs
}

// A value added by two configurations (a reload adopting a pooled table)
// counts once, and stays live until both remove it.
func TestLiveSetSumsEachLiveValueOnce(t *testing.T) {
	var s liveSet[*int]
	a, b := new(3), new(4)
	s.add(a)
	s.add(a)
	s.add(b)
	value := func(p *int) int { return *p }
	if got := s.sum(value); got != 7 {
		t.Fatalf("sum of a (added twice) and b: got %d, want 7", got)
	}
	s.remove(a)
	s.remove(b)
	if got := s.sum(value); got != 3 {
		t.Fatalf("sum after removing a once and b: got %d, want 3", got)
	}
	s.remove(a)
	if got := s.sum(value); got != 0 {
		t.Fatalf("sum after removing a twice: got %d, want 0", got)
	}
}
