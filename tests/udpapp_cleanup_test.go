package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// reloadBound is how long a reload may take while requests wait for an
// upstream that never answers, whose timeout is a minute. It is no speed
// target: a reload that waited for the upstream would take the whole
// minute, so any bound well below it tells the two apart on however slow a
// machine.
const reloadBound = 30 * time.Second

// reloadPromptly reloads c with cfg and fails the test if that took as long
// as waiting for the upstream would have.
func reloadPromptly(t *testing.T, c *testcaddy.Caddy, cfg string) {
	t.Helper()
	start := time.Now()
	c.Load(t, cfg)
	if took := time.Since(start); took >= reloadBound {
		t.Fatalf("the reload took %v with requests waiting for an unresponsive upstream (timeout 1m); it must not wait for them", took.Round(time.Millisecond))
	}
}

// A reload of the gamegate app does not wait for the A2S shield's requests
// waiting for a game server that never answers: the ones a worker runs are
// cut short and the queued ones dropped, each counted as dropped_no_answer.
// The upstream queries themselves (shared by every request, so no
// request's end cancels them) end with the configuration: their sockets
// close, rather than waiting out attempt_timeout.
func TestUDPAppReloadDoesNotWaitForA2SUpstream(t *testing.T) {
	var asked [3]atomic.Int64 // A2S_INFO, A2S_PLAYER, A2S_RULES the game server read
	upstream := testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if _, typ, err := wirea2s.Peek(req); err == nil && typ >= wirea2s.TypeInfoRequest && typ <= wirea2s.TypeRulesRequest {
			asked[typ-wirea2s.TypeInfoRequest].Add(1)
		}
		return nil // never answers
	})
	addr := testutil.FreeUDPAddr(t)
	// One reader: the datagrams of one client are handled in the order sent.
	cfg := fmt.Sprintf(`{
	gamegate {
		udp %s {
			readers 1
			a2s_shield %s {
				attempt_timeout 1m
				retries -1
			}
		}
	}
}
`, addr, upstream)
	c := testcaddy.Start(t, cfg)
	dropped := func() float64 {
		return c.MustMetric(t, `gamegate_a2s_shield_requests_total{outcome="dropped_no_answer"}`)
	}
	before := dropped()

	client := testutil.DialUDP(t, "127.0.0.1:0", addr)
	request := func(typ wirea2s.Type, challenge int32, has bool) {
		b, err := (&wirea2s.Request{Type: typ, Challenge: challenge, HasChallenge: has}).AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		client.Send(b)
	}
	request(wirea2s.TypeInfoRequest, 0, false)
	reply, ok := client.Recv(5 * time.Second)
	if !ok {
		t.Fatal("no S2C_CHALLENGE")
	}
	challenge, err := wirea2s.DecodeChallenge(reply)
	if err != nil {
		t.Fatalf("S2C_CHALLENGE: %v", err)
	}
	// Seven requests wait for the game server: two with the workers, five
	// in the queue. The last one sent starts the last upstream query, so
	// once the game server has read it, all seven are queued or running.
	types := []wirea2s.Type{wirea2s.TypeInfoRequest, wirea2s.TypeInfoRequest, wirea2s.TypeInfoRequest,
		wirea2s.TypePlayerRequest, wirea2s.TypePlayerRequest, wirea2s.TypePlayerRequest, wirea2s.TypeRulesRequest}
	for _, typ := range types {
		request(typ, challenge, true)
	}
	testutil.WaitFor(t, "the game server to be asked A2S_INFO, A2S_PLAYER and A2S_RULES", func() bool {
		return asked[0].Load() > 0 && asked[1].Load() > 0 && asked[2].Load() > 0
	})
	// One upstream query of each type, each on its own socket.
	if n := testutil.UDPSocketsConnectedTo(t, upstream); n != 3 {
		t.Fatalf("sockets connected to the game server before the reload: got %d, want 3 (one query of each type)", n)
	}

	reloadPromptly(t, c, cfg)
	if got := dropped() - before; got != float64(len(types)) {
		t.Fatalf("dropped_no_answer rose by %v across the reload, want %d (every waiting request)", got, len(types))
	}
	testutil.WaitFor(t, "the previous configuration's upstream queries to close their sockets (attempt_timeout is 1m)", func() bool {
		return testutil.UDPSocketsConnectedTo(t, upstream) == 0
	})
	// The new configuration serves: a fresh client is challenged.
	fresh := testutil.DialUDP(t, "127.0.0.1:0", addr)
	b, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)
	fresh.Send(b)
	if reply, ok := fresh.Recv(5 * time.Second); !ok || len(reply) != wirea2s.ChallengeLen {
		t.Fatalf("after the reload: got %x, %v; want an S2C_CHALLENGE", reply, ok)
	}
}

// A reload of the gamegate app does not wait for GQP queries waiting for
// an HTTP upstream that never answers: the ones the workers run are cut
// short and the queued ones dropped, each counted as stopped. The upstream
// requests themselves (shared by every query, so no query's end cancels
// them) end with the configuration: the upstream sees each one's
// connection close, rather than waiting out upstream_timeout.
func TestUDPAppReloadDoesNotWaitForGQPUpstream(t *testing.T) {
	up, requests, open := blockingUpstream(t)

	addr := testutil.FreeUDPAddr(t)
	cfg := fmt.Sprintf(`{
	gamegate {
		udp %s {
			gqp {
				identify reload-test 1.0 1
				upstream_timeout 1m
				command slow {
					url %s/slow
					upstream_rate 100
					upstream_burst 100
				}
				command motd {
					record message hello
				}
			}
		}
	}
}
`, addr, up)
	c := testcaddy.Start(t, cfg)
	stopped := func() float64 { return c.MustMetric(t, `gamegate_gqp_dropped_total{reason="stopped"}`) }
	before := stopped()

	// Eight queries from a trusted source (loopback), each with its own
	// argument, so each starts its own upstream request: four wait with
	// the workers, four in the queue. The reader that starts a query's
	// request queues the query in the same call, and a reload stops the
	// readers before it cleans up, so once the upstream has all eight
	// requests, the reload finds all eight queries queued or running.
	const queries = 8
	client := testutil.DialUDP(t, "127.0.0.1:0", addr)
	for i := range queries {
		client.Send(testutil.Encode(t, wiregqp.QueryOf("slow", fmt.Sprint(i))))
	}
	testutil.WaitFor(t, "the upstream to get every query's request", func() bool { return requests.Load() == queries })

	reloadPromptly(t, c, cfg)
	if got := stopped() - before; got != queries {
		t.Fatalf("gamegate_gqp_dropped_total{reason=\"stopped\"} rose by %v across the reload, want %d (every waiting query)", got, queries)
	}
	testutil.WaitFor(t, "the upstream to see every request of the previous configuration cancelled (upstream_timeout is 1m)", func() bool {
		return open.Load() == 0
	})
	if !gqpMotd(addr, 5*time.Second) {
		t.Fatal("after the reload: motd not answered")
	}
}

// The layer4 GQP handler's upstream requests end with its configuration
// too: a reload cancels them (the upstream sees each connection close)
// rather than leaving them to run until upstream_timeout.
func TestLayer4GQPReloadEndsUpstreamRequests(t *testing.T) {
	up, requests, open := blockingUpstream(t)

	addr := testutil.FreeUDPAddr(t)
	cfg := fmt.Sprintf(`{
	layer4 {
		udp/%s {
			@gqp gqp
			route @gqp {
				gqp {
					identify reload-test 1.0 1
					upstream_timeout 1m
					command slow {
						url %s/slow
						upstream_rate 100
						upstream_burst 100
					}
				}
			}
		}
	}
}
`, addr, up)
	c := testcaddy.Start(t, cfg)
	// Four clients (the handler answers each client's queries in turn),
	// each starting its own upstream request.
	const queries = 4
	for i := range queries {
		testutil.DialUDP(t, "127.0.0.1:0", addr).Send(testutil.Encode(t, wiregqp.QueryOf("slow", fmt.Sprint(i))))
	}
	testutil.WaitFor(t, "the upstream to get every query's request", func() bool { return requests.Load() == queries })
	reloadPromptly(t, c, cfg)
	testutil.WaitFor(t, "the upstream to see every request of the previous configuration cancelled (upstream_timeout is 1m)", func() bool {
		return open.Load() == 0
	})
}

// blockingUpstream starts an HTTP upstream that answers no request until
// the test is over, and returns its URL and the count of requests it got
// and of those still open (not yet cancelled by their client).
func blockingUpstream(t *testing.T) (url string, requests, open *atomic.Int64) {
	release := make(chan struct{})
	requests, open = new(atomic.Int64), new(atomic.Int64)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		open.Add(1)
		defer open.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) }) // before up.Close, which waits for the handlers
	return up.URL, requests, open
}
