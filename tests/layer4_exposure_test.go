package tests

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// A layer4 UDP server running gamegate's handlers on loopback starts
// without a warning; one on 0.0.0.0 (a leased port, for the moment of one
// configuration) logs one warning saying why and pointing to the gamegate
// app, and a QoS server on loopback beside it none.
func TestLayer4UDPBeyondLoopbackWarns(t *testing.T) {
	loopback, other := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	_, port, err := net.SplitHostPort(other)
	if err != nil {
		t.Fatal(err)
	}
	exposed := "0.0.0.0:" + port
	config := func(second string) string {
		return fmt.Sprintf(`{
	admin off
	layer4 {
		udp/%s {
			route {
				qos
			}
		}
		udp/%s {
			route {
				subroute {
					route {
						gqp {
							identify exposure-test 1.0 1
						}
					}
				}
			}
		}
	}
}
`, loopback, second)
	}
	warnings := func(c *testcaddy.Caddy) []map[string]any {
		var out []map[string]any
		for _, e := range c.Logs(t) {
			if msg, _ := e["msg"].(string); strings.Contains(msg, "beyond loopback") {
				out = append(out, e)
			}
		}
		return out
	}
	c := testcaddy.StartLogged(t, config(other))
	if w := warnings(c); len(w) != 0 {
		t.Fatalf("every listener on loopback: got warnings %v", w)
	}
	c.Load(t, config(exposed))
	w := warnings(c)
	c.Load(t, config(other)) // 0.0.0.0 only for as long as it takes
	if len(w) != 1 {
		t.Fatalf("one server on %s: got %d warnings %v, want 1", exposed, len(w), w)
	}
	e := w[0]
	msg := e["msg"].(string)
	if e["level"] != "warn" || e["address"] != "udp/"+exposed || fmt.Sprint(e["handlers"]) != "[gqp]" ||
		!strings.Contains(msg, "deadlock") || !strings.Contains(msg, "gamegate app") {
		t.Fatalf("warning: %v", e)
	}
	if w := warnings(c); len(w) != 1 {
		t.Fatalf("back on loopback: got %d warnings in all, want still 1", len(w))
	}
	t.Logf("warning: %s %v", msg, e)
}
