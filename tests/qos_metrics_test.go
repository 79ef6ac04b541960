package tests

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// exchangeQoS sends n QoS requests from one client to addr and waits for
// their n answers.
func exchangeQoS(t *testing.T, addr string, n int) {
	t.Helper()
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	for i := range n {
		c.Send(unityRequest(uint8(i), 5, uint64(i)))
	}
	for i := range n {
		if _, ok := c.Recv(replyTimeout); !ok {
			t.Fatalf("%s: %d of %d requests answered", addr, i, n)
		}
	}
}

// QoS counters are counted by listener: two QoS ports in one process, in
// the gamegate app or on caddy-l4 routes (sharing a name or not), are told
// apart. Series of what is not configured do not appear: no
// listener="layer4" without a caddy-l4 route serving gamegate's handlers,
// no server="ad_hoc" without ad-hoc targets. It runs in a process of its
// own: metrics are process-wide.
func TestQoSCountsByListener(t *testing.T) {
	if runIsolated(t) {
		return
	}
	appA, appB := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	answering := testutil.ServeUDP(t, func(netip.AddrPort, []byte) [][]byte { return nil }).String()
	httpAddr := testutil.FreeTCPAddr(t)
	site := fmt.Sprintf(`
http://%s {
	game_query {
		server known %s a2s
	}
}
`, httpAddr, answering)
	config := fmt.Sprintf(`{
	gamegate {
		udp %s {
			qos {
				burst 100
			}
		}
		udp %s {
			qos {
				burst 100
			}
		}
	}
}
`, appA, appB) + site
	c := testcaddy.Start(t, config)
	for _, f := range []struct{ family, label, absent string }{
		{"gamegate_udp_datagrams_total", "listener", "layer4"},
		{"gamegate_game_query_upstream_queries_total", "server", "ad_hoc"},
		{"gamegate_game_query_upstream_query_duration_seconds", "server", "ad_hoc"},
	} {
		if got := labelValues(t, c, f.family, f.label); slices.Contains(got, f.absent) {
			t.Errorf("%s{%s}: got %q, want no %q where it is not configured", f.family, f.label, got, f.absent)
		}
	}
	requests := func(listener string) float64 {
		v, _ := c.Metric(t, `gamegate_qos_requests_total{listener="`+listener+`"}`)
		return v
	}
	exchangeQoS(t, appA, 3)
	exchangeQoS(t, appB, 5)
	if a, b := requests(appA), requests(appB); a != 3 || b != 5 {
		t.Fatalf("QoS requests in the gamegate app: got %v on %s and %v on %s, want 3 and 5", a, appA, b, appB)
	}

	// caddy-l4 routes: one of their own, two sharing a name.
	l4, named1, named2 := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	route := func(addr, opts string) string {
		return fmt.Sprintf("\t\tudp/%s {\n\t\t\troute {\n\t\t\t\tqos {\n\t\t\t\t\tburst 100\n%s\t\t\t\t}\n\t\t\t}\n\t\t}\n", addr, opts)
	}
	layer4 := "\tlayer4 {\n" + route(l4, "") + route(named1, "\t\t\t\t\tname shared\n") + route(named2, "\t\t\t\t\tname shared\n") + "\t}\n"
	c.Load(t, strings.Replace(config, "{\n", "{\n"+layer4, 1))
	exchangeQoS(t, l4, 2)
	exchangeQoS(t, named1, 4)
	exchangeQoS(t, named2, 6)
	exchangeQoS(t, appA, 1)
	for listener, want := range map[string]float64{appA: 4, appB: 5, l4: 2, named1: 4, named2: 6} {
		if got := requests(listener); got != want {
			t.Errorf(`gamegate_qos_requests_total{listener=%q}: got %v, want %v`, listener, got, want)
		}
	}
	if got := labelValues(t, c, "gamegate_udp_datagrams_total", "listener"); !slices.Contains(got, "layer4") {
		t.Errorf("gamegate_udp_datagrams_total{listener}: got %q, want layer4 once caddy-l4 routes served", got)
	}
	if got := labelValues(t, c, "gamegate_qos_requests_total", "listener"); !slices.Equal(got, sorted(appA, appB, l4, named1, named2)) {
		t.Errorf("gamegate_qos_requests_total{listener}: got %q, want the five QoS listeners", got)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
