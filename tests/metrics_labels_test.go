package tests

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// labelValues returns the values label takes in the samples of the metric
// family name (the histogram's _bucket, _sum and _count included) at the
// admin API's /metrics.
func labelValues(t *testing.T, c *testcaddy.Caddy, name, label string) []string {
	t.Helper()
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(?:_bucket|_sum|_count)?\{(?:[^}]*,)?` + label + `="([^"]*)"`)
	seen := map[string]bool{}
	for line := range strings.SplitSeq(get(t, "http://"+c.AdminAddr+"/metrics"), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			seen[m[1]] = true
		}
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// Metric labels come from the configuration, never from traffic: game
// servers by their configured names (ad-hoc targets all as ad_hoc), UDP
// servers by their configured addresses. Requests for unknown names and
// many ad-hoc addresses, requests for fleets that do not exist, and
// datagrams no protocol claims, add no label value. Upstream query times are a histogram in seconds.
func TestMetricLabelsComeFromTheConfig(t *testing.T) {
	answering := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { return nil }).String()
	udpAddr, httpAddr := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	c := testcaddy.Start(t, gateConfig{UDP: udpAddr, Protocols: "qos", Web: httpAddr, Site: `qos_discovery {
	fleet labelled-fleet {
		server region-a 1 127.0.0.1:9000
	}
}
handle_path /query/* {
	game_query {
		server known ` + answering + ` a2s {
			timeout 100ms
			retries -1
		}
		ad_hoc a2s {
			timeout 100ms
			retries -1
		}
		allow_targets 127.0.0.0/8
		ad_hoc_rate 1000
		ad_hoc_burst 1000
	}
}`}.String())
	// Metrics are process-wide: other tests' configurations have labels
	// of their own. This one's are there from the start, and traffic adds
	// none.
	families := []struct{ family, label, configured string }{
		{"gamegate_game_query_upstream_queries_total", "server", "ad_hoc known"},
		{"gamegate_game_query_upstream_query_duration_seconds", "server", "ad_hoc known"},
		{"gamegate_udp_datagrams_total", "listener", udpAddr},
		{"gamegate_udp_dropped_total", "listener", udpAddr},
		{"gamegate_discovery_fleet_requests_total", "fleet", "labelled-fleet"},
	}
	// A fleet's label appears with its first answer; requests for fleets
	// that do not exist must add none.
	fleetURL := "http://" + httpAddr + "/v1/fleets/%s/servers"
	request(t, "GET", fmt.Sprintf(fleetURL, "labelled-fleet"))
	before := map[string][]string{}
	for _, f := range families {
		before[f.family] = labelValues(t, c, f.family, f.label)
		for _, v := range strings.Fields(f.configured) {
			if !slices.Contains(before[f.family], v) {
				t.Fatalf("%s{%s}: %q, from the configuration, missing from %q", f.family, f.label, v, before[f.family])
			}
		}
	}
	base := "http://" + httpAddr + "/query/"
	adHocBefore := c.MustMetric(t, `gamegate_game_query_upstream_query_duration_seconds_count{server="ad_hoc"}`)
	knownBefore := c.MustMetric(t, `gamegate_game_query_upstream_query_duration_seconds_bucket{server="known",le="10"}`)
	fleetBefore := c.MustMetric(t, `gamegate_discovery_fleet_requests_total{fleet="labelled-fleet"}`)
	request(t, "GET", base+"known")
	request(t, "GET", fmt.Sprintf(fleetURL, "labelled-fleet"))
	for i := range 5 {
		request(t, "GET", base+fmt.Sprintf("unknown-%d", i))
		request(t, "GET", base+testutil.FreeUDPAddr(t))
		request(t, "GET", base+fmt.Sprintf("127.0.0.%d:27015", i+2))
		request(t, "GET", fmt.Sprintf(fleetURL, fmt.Sprintf("made-up-fleet-%d", i)))
	}
	junk := testutil.DialUDP(t, "127.0.0.1:0", udpAddr)
	junk.Send([]byte("no protocol starts like this"))
	testutil.WaitFor(t, "the datagram to be counted", func() bool {
		return c.MustMetric(t, `gamegate_udp_datagrams_total{listener="`+udpAddr+`"}`) > 0
	})

	for _, f := range families {
		if got := labelValues(t, c, f.family, f.label); !slices.Equal(got, before[f.family]) {
			t.Errorf("%s{%s} after the traffic: %q, want what the configurations gave: %q", f.family, f.label, got, before[f.family])
		}
	}
	if n := c.MustMetric(t, `gamegate_discovery_fleet_requests_total{fleet="labelled-fleet"}`) - fleetBefore; n != 1 {
		t.Errorf("labelled-fleet's answered requests: %v, want 1", n)
	}
	if n := c.MustMetric(t, `gamegate_game_query_upstream_query_duration_seconds_count{server="ad_hoc"}`) - adHocBefore; n != 10 {
		t.Errorf("ad-hoc upstream queries timed: %v, want 10", n)
	}
	if n := c.MustMetric(t, `gamegate_game_query_upstream_query_duration_seconds_bucket{server="known",le="10"}`) - knownBefore; n != 1 {
		t.Errorf("known's queries within 10 s: %v, want 1", n)
	}
}
