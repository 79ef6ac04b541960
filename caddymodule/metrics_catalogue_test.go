package caddymodule

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gamegate/gamegate/caddymodule/caddya2s"
	"github.com/gamegate/gamegate/caddymodule/caddydiscovery"
	"github.com/gamegate/gamegate/caddymodule/caddyfreeciv"
	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/caddymodule/caddygqp"
	"github.com/gamegate/gamegate/caddymodule/caddymaster"
	"github.com/gamegate/gamegate/caddymodule/caddyqos"
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/caddymodule/caddyrelay"
)

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
	for _, s := range []*caddyglue.MetricSet{
		&caddyqos.QosMetrics.MetricSet, &caddyrelay.RelayMetrics.MetricSet, &caddyrelay.RelayAPIMetrics.MetricSet, &caddygqp.GqpMetrics.MetricSet,
		&caddya2s.A2sShieldMetrics.MetricSet, &caddyfreeciv.FreecivMetrics.MetricSet, &caddydiscovery.DiscoveryMetrics.MetricSet,
		&caddyquery.GameQueryMetrics.MetricSet, &caddymaster.MasterMetrics.MetricSet, caddyglue.UdpMetrics,
	} {
		cs = append(cs, s.Collectors...)
	}
	return cs
}
