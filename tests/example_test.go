package tests

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/internal/testutil"
)

// The showcase configuration must keep working: load Caddyfile.example with
// its listen addresses moved to free loopback ports and check every service
// it declares.
func TestCaddyfileExample(t *testing.T) {
	example, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	qosAddr := testutil.FreeUDPAddr(t)
	t.Setenv("GAMEGATE_QOS_LISTEN", qosAddr)
	testutil.StartCaddy(t, string(example))

	checker, err := qos.NewChecker(qos.CheckConfig{Requests: 20, Wait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	target := qos.Target{Region: "example", Addr: netip.MustParseAddrPort(qosAddr)}
	results, err := checker.Check(context.Background(), []qos.Target{target})
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
}
