package tests

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// A forged burst of QoS requests "from" the discovery health checker's
// address (loopback: the checker sends from 127.0.0.1 to servers there)
// gets that address banned on the QoS port it was sent to. The checker's
// probes are still answered there, so no region is withheld from the
// players; the ban holds for ordinary requests from that address; and the
// other QoS port of the process, with a table of its own, never saw it.
func TestQoSHealthCheckSurvivesForgedBan(t *testing.T) {
	alpha, beta := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	// gamma is a QoS server outside this process, so that the fleet is
	// never left without a healthy server (discovery then serves them all).
	var gammaRequests atomic.Int64
	gamma := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		var r wireqos.Request
		if r.Decode(req) != nil {
			return nil
		}
		gammaRequests.Add(1)
		return [][]byte{wireqos.AppendResponse(nil, wireqos.FlowNone, r.Custom)}
	})
	addr := testutil.FreeTCPAddr(t)
	const requests, failures = 3, 2
	testcaddy.Start(t, fmt.Sprintf(`{
	gamegate {
		udp %s {
			qos
		}
		udp %s {
			qos
		}
	}
}
http://%s {
	qos_discovery {
		fleet %s {
			server alpha 1 %s
			server beta 2 %s
			server gamma 3 %s
		}
		health_check {
			interval 100ms
			failures %d
			requests %d
			wait 200ms
		}
	}
}
`, alpha, beta, addr, fleetID, alpha, beta, gamma, failures, requests))
	url := "http://" + addr + "/v1/fleets/" + fleetID + "/servers"
	listed := func() []string {
		var out []string
		body := request(t, "GET", url).body
		for _, r := range []string{"alpha", "beta", "gamma"} {
			if strings.Contains(body, `"region_id":"`+r+`"`) {
				out = append(out, r)
			}
		}
		return out
	}
	// roundsPass waits until gamma has seen n more health checks.
	roundsPass := func(n int) {
		t.Helper()
		from := gammaRequests.Load()
		testutil.WaitFor(t, fmt.Sprintf("%d health checks", n), func() bool { return gammaRequests.Load() >= from+int64(n*requests) })
	}
	roundsPass(1)
	if got := listed(); len(got) != 3 {
		t.Fatalf("before the attack: listed %v, want alpha, beta and gamma", got)
	}

	// 60 forged 12-byte requests from the checker's address, past the
	// default burst of 40.
	forger := testutil.DialUDP(t, "127.0.0.1:0", alpha)
	forged := []byte{0x59, 0x00, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for range 60 {
		forger.Send(forged)
	}
	banned := false
	for range 60 {
		if b, ok := forger.Recv(2 * time.Second); !ok {
			break
		} else if r := (wireqos.Response{}); r.Decode(b) == nil && r.Flow.IsBan() {
			banned = true
			break
		}
	}
	if !banned {
		t.Fatal("the forged burst was not answered with a ban: the attack did not take place")
	}
	roundsPass(failures + 2)
	if got := listed(); len(got) != 3 {
		t.Fatalf("after a forged burst from the health checker's address and %d health checks: listed %v, want alpha, beta and gamma", failures+2, got)
	}

	// The ban holds for ordinary requests at alpha, and beta's table
	// never saw it.
	plain := []byte{0x59, 0x00, 0x01, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	for name, server := range map[string]string{"alpha": alpha, "beta": beta} {
		c := testutil.DialUDP(t, "127.0.0.1:0", server)
		c.Send(plain)
		_, answered := c.Recv(time.Second)
		if want := name == "beta"; answered != want {
			t.Errorf("an ordinary request from 127.0.0.1 to %s: answered %v, want %v", name, answered, want)
		}
	}
}

// Without a name, each QoS listener keeps its own bans, in a layer4 route
// and in the gamegate app alike: a source banned on one port is answered
// on the other. With the same name, they share them.
func TestQoSListenersKeepTheirOwnBans(t *testing.T) {
	layer4 := func(a, b, name string) string {
		return fmt.Sprintf(`{
	layer4 {
		udp/%s {
			idle_timeout 10s
			route {
				qos {
					burst 3
					%s
				}
			}
		}
		udp/%s {
			idle_timeout 10s
			route {
				qos {
					burst 3
					%s
				}
			}
		}
	}
}
`, a, name, b, name)
	}
	app := func(a, b, name string) string {
		return fmt.Sprintf(`{
	gamegate {
		udp %s {
			qos {
				burst 3
				%s
			}
		}
		udp %s {
			qos {
				burst 3
				%s
			}
		}
	}
}
`, a, name, b, name)
	}
	for _, tc := range []struct {
		name   string
		config func(a, b, name string) string
		shared bool
	}{
		{"layer4", layer4, false},
		{"gamegate app", app, false},
		{"layer4 named", layer4, true},
		{"gamegate app named", app, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
			name := "source_key ip" // the default: no name
			if tc.shared {
				name = "name shared-" + strings.ReplaceAll(tc.name, " ", "-")
			}
			testcaddy.Start(t, tc.config(a, b, name))
			c := testutil.DialUDP(t, "127.0.0.7:0", a)
			for seq := range uint8(4) {
				c.Send(unityRequest(seq, 1, 0))
			}
			for i := range 4 {
				resp, ok := c.Recv(replyTimeout)
				if !ok || wireqos.FlowControl(resp[1]&0xF).IsBan() != (i == 3) {
					t.Fatalf("response %d at the first port: got %x (%v), want a ban on the 4th", i, resp, ok)
				}
			}
			other := testutil.DialUDP(t, "127.0.0.7:0", b)
			other.Send(unityRequest(0, 2, 0))
			_, answered := other.Recv(time.Second)
			if answered == tc.shared {
				t.Fatalf("the source banned at the first port, at the second: answered %v, want %v", answered, !tc.shared)
			}
		})
	}
}
