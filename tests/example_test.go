package tests

import (
	"context"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/discovery"
	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// The showcase configuration must keep working: load Caddyfile.example with
// its ports moved to free loopback ports and use every service it declares
// the way a game client does: discovery, then a QoS check of each region.
func TestCaddyfileExample(t *testing.T) {
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	qosAddr := testutil.FreeUDPAddr(t)
	relayAddr := testutil.FreeUDPAddr(t)
	freecivListen := testutil.FreeTCPAddr(t)
	_, httpPort, _ := net.SplitHostPort(testutil.FreeTCPAddr(t))
	freecivServer := testutil.StartFreeciv(t)
	for k, v := range map[string]string{
		"GAMEGATE_QOS_LISTEN":       qosAddr,
		"GAMEGATE_QOS_PUBLIC":       qosAddr,
		"GAMEGATE_RELAY_PUBLIC":     relayAddr,
		"GAMEGATE_HTTP_PORT":        httpPort,
		"GAMEGATE_RELAY_LISTEN":     relayAddr,
		"GAMEGATE_GQP_LISTEN":       testutil.FreeUDPAddr(t),
		"GAMEGATE_FREECIV_LISTEN":   freecivListen,
		"GAMEGATE_FREECIV_UPSTREAM": freecivServer,
	} {
		t.Setenv(k, v)
	}
	testcaddy.Start(t, string(example))

	var dc discovery.Client
	base := "http://127.0.0.1:" + httpPort
	found, err := dc.Fetch(context.Background(), base, "example-fleet")
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Servers) != 1 || found.Servers[0].RegionID != "example-region" || found.Servers[0].Addr() != netip.MustParseAddrPort(qosAddr) {
		t.Fatalf("discovery: got %+v, want example-region at %s", found.Servers, qosAddr)
	}
	if again, err := dc.Fetch(context.Background(), base, "example-fleet"); err != nil || !again.NotModified {
		t.Fatalf("second discovery: got %+v (%v), want a 304", again, err)
	}

	checker, err := qos.NewChecker(qos.CheckConfig{Requests: 20, Wait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := found.Servers[0]
	results, err := checker.Check(context.Background(), []qos.Target{{Region: s.RegionID, Addr: s.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.Sent != 20 || r.Received != 20 || r.Loss() != 0 || r.Flow != 0 {
		t.Fatalf("QoS check against the example: sent %d received %d loss %v flow %v, want 20/20/0/none", r.Sent, r.Received, r.Loss(), r.Flow)
	}
	if r.Percentile(50) <= 0 {
		t.Fatalf("latency p50: got %v, want > 0", r.Percentile(50))
	}

	// The relay, through its allocations API with the development token.
	rc, err := relay.Check(context.Background(), relay.CheckConfig{
		API: &relay.APIClient{Base: base + "/relay", Token: "dev-only-token"}, Messages: 50, Timeout: 20 * time.Second,
	})
	if err != nil || rc.Received != 50 || rc.Relay != relayAddr {
		t.Fatalf("relay check against the example: %+v (%v)", rc, err)
	}

	// Game queries: the GQP responder answering from the example's JSON
	// status, and the Freeciv server.
	var st struct {
		Name       string `json:"name"`
		NumPlayers int    `json:"numplayers"`
		Version    string `json:"version"`
	}
	if r := getJSON(t, base+"/query/example", &st); r.status != 200 || st.Name != "gamegate example" || st.NumPlayers != 2 {
		t.Fatalf("/query/example: got %d %s", r.status, r.body)
	}
	// The example keeps the default 3 s query timeout, which a busy
	// machine can exceed while it schedules the server: a 504 is retried
	// (after the negative TTL) for up to a minute.
	var civ response
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if civ = getJSON(t, base+"/query/civ", &st); civ.status != 504 || time.Now().After(deadline) {
			break
		}
	}
	if civ.status != 200 || st.Version != testutil.FreecivVersion(t) {
		t.Fatalf("/query/civ: got %d %s", civ.status, civ.body)
	}

	// The guarded Freeciv route: a client's JOIN_REQ reaches the server
	// and its JOIN_REPLY comes back.
	c, err := net.Dial("tcp", freecivListen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(joinReq(t, "+not-a-real-capability")); err != nil {
		t.Fatal(err)
	}
	if reply, _, _, _ := readServer(t, c, 2*time.Second); reply == nil || len(reply.Capability) == 0 {
		t.Fatalf("through the example's Freeciv route: got JOIN_REPLY %+v", reply)
	}
}
