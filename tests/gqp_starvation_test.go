package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/gqp"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// TestUDPAppGQPSpoofedSlowQueriesStarveNobody floods the gamegate app's GQP
// responder with queries that need a slow HTTP upstream (a new argument
// each, so none is cached) from many spoofed, untrusted 127.x sources. The
// trusted client's built-in, static and cached queries are answered
// throughout, its own uncached query still gets a worker, the spoofed
// queries are dropped and counted without ever reaching the queue, and
// the upstream requests they start stay within the command's budget.
//
// The flood is paced: 10,000 queries a second, 500 times the command's
// upstream budget, but well within what the readers answer, so that what
// is measured is the responder's behaviour, not the kernel dropping
// datagrams from full receive queues on a busy machine. The trusted client
// still allows for a lost datagram: it retries, and the test asks that it
// get at least 95% of its answers and never miss two in a row (any answer
// that comes must be right); the spoofed side is held to exact bounds.
func TestUDPAppGQPSpoofedSlowQueriesStarveNobody(t *testing.T) {
	if runIsolated(t) {
		return
	}
	var slowRequests, slowNow, slowPeak atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status" {
			w.Write([]byte(`{"hostname": "starve-test", "numplayers": 3}`))
			return
		}
		slowRequests.Add(1)
		n := slowNow.Add(1)
		defer slowNow.Add(-1)
		for p := slowPeak.Load(); n > p && !slowPeak.CompareAndSwap(p, n); p = slowPeak.Load() {
		}
		select { // slower than upstream_timeout: every request holds its caller for all of it
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer up.Close()

	addr := testutil.FreeUDPAddr(t)
	// Only 127.0.0.1 is trusted: the rest of 127/8 plays the internet.
	const slowRate = 20
	c := testcaddy.Start(t, fmt.Sprintf(`{
	gamegate {
		udp %s {
			readers 2
			gqp {
				identify starve-test 1.0 1
				trusted_networks 127.0.0.1/32
				upstream_timeout 1s
				command slow {
					url %s/slow
					upstream_rate %d
					upstream_burst %d
				}
				command status {
					url %s/status
					ttl 1m
				}
				command motd {
					record message hello
				}
			}
		}
	}
}
http://%s {
	respond "ok"
}
`, addr, up.URL, slowRate, slowRate, up.URL, testutil.FreeTCPAddr(t)))

	client := gqp.Client{Timeout: time.Second, Retries: 4, Local: "127.0.0.1:0"}
	query := func(names ...string) (*wiregqp.Response, error) {
		var q wiregqp.Query
		for _, n := range names {
			q.Add([]byte(n))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return client.Query(ctx, addr, &q)
	}
	// The status is fetched once (through a worker) and cached.
	if r, err := query("status"); err != nil || r.Replies[0].Status != wiregqp.StatusOK {
		t.Fatalf("status before the flood: %+v, %v", r, err)
	}
	metric := func(reason string) float64 {
		return c.MustMetric(t, `gamegate_gqp_dropped_total{reason="`+reason+`"}`)
	}
	amplification := func() float64 { return c.MustMetric(t, `gamegate_gqp_queries_total{outcome="amplification"}`) }
	unvalidatedBefore, queueFullBefore, amplificationBefore := metric("unvalidated"), metric("queue_full"), amplification()
	runtime.GC()
	baseline := runtime.NumGoroutine()

	// The flood: 400 sockets on 400 untrusted loopback addresses, each
	// query asking the slow command with an argument never asked before.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	to := netip.MustParseAddrPort(addr)
	var conns []*net.UDPConn
	for i := range 400 {
		ip := netip.AddrFrom4([4]byte{127, 3, byte(i / 200), byte(1 + i%200)})
		conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	// Two flooders, each sending floodPerTick queries a millisecond (a
	// tick missed on a busy machine is skipped, never made up for).
	const floodPerTick = 5
	var sent atomic.Int64
	var flooders sync.WaitGroup
	for w := range 2 {
		flooders.Add(1)
		go func() {
			defer flooders.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			var q wiregqp.Query
			var b []byte
			for i := 0; ; {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for range floodPerTick {
					q.Reset()
					q.Add([]byte("slow"), fmt.Appendf(nil, "%d-%d", w, rng.Uint64()))
					b, _ = q.AppendTo(b[:0])
					if _, err := conns[i%len(conns)].WriteToUDPAddrPort(b, to); err == nil {
						sent.Add(1)
					}
					i++
				}
			}
		}()
	}
	var peakGoroutines atomic.Int64
	go func() {
		for ctx.Err() == nil {
			if n := int64(runtime.NumGoroutine()); n > peakGoroutines.Load() {
				peakGoroutines.Store(n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	// Meanwhile the trusted client asks, one query at a time, its
	// built-in, static and cached queries: every answer that comes is
	// right, at least 95% come, and no two queries in a row go unanswered
	// (each after five attempts).
	var asked, answered, missedInARow, mostMissedInARow int
	for ctx.Err() == nil {
		for _, cmd := range []string{"identify", "motd", "status"} {
			asked++
			r, err := query(cmd)
			switch {
			case err != nil:
				missedInARow++
				mostMissedInARow = max(mostMissedInARow, missedInARow)
				t.Logf("trusted %s during the flood, unanswered after every attempt: %v", cmd, err)
				continue
			case len(r.Replies) != 1 || r.Replies[0].Status != wiregqp.StatusOK:
				t.Errorf("trusted %s during the flood: got %+v, want status 10", cmd, r)
			}
			answered++
			missedInARow = 0
		}
	}
	if answered*100 < asked*95 {
		t.Errorf("trusted client during the flood: %d of %d queries answered, want at least 95%%", answered, asked)
	}
	if mostMissedInARow > 1 {
		t.Errorf("trusted client during the flood: %d queries in a row unanswered after every attempt, want never two", mostMissedInARow)
	}
	// And its own uncached query reaches a worker: the upstream times out,
	// so the answer is 31, but it is an answer.
	r, err := query("slow")
	if err != nil || len(r.Replies) != 1 || r.Replies[0].Status != wiregqp.StatusUnavailable {
		t.Errorf("trusted uncached query during the flood: %+v, %v, want status 31 from a worker", r, err)
	}
	cancel()
	flooders.Wait()

	// Each spoofed query either started an upstream request (within the
	// budget) and was dropped, or found the budget spent and got a 31
	// answer, which is larger than the query: dropped for amplification.
	unvalidated, queueFull := metric("unvalidated")-unvalidatedBefore, metric("queue_full")-queueFullBefore
	inline := amplification() - amplificationBefore
	if unvalidated < 1 || inline < 1000 {
		t.Errorf("spoofed queries: %v dropped as unvalidated, %v answered on the reader, want both (of %d sent)", unvalidated, inline, sent.Load())
	}
	if queueFull != 0 {
		t.Errorf("queries dropped for a full queue: %v, want 0 (spoofed queries never reach it)", queueFull)
	}
	// Upstream requests: at most the budget (a burst of slowRate, then
	// slowRate a second) over the flood's 4 s and the client's query.
	if n, bound := slowRequests.Load(), int64(slowRate+slowRate*6+1); n > bound {
		t.Errorf("upstream requests: %d, want at most %d (the command's budget)", n, bound)
	}
	// Each request lives at most upstream_timeout (1 s), so at most
	// burst + rate×1 s run at once, each with a few goroutines (8 allowed: the
	// cache's load, the HTTP client's connection, the test upstream's
	// handler): bounded by the budget, not by the 400 sources or the
	// queries.
	if p, bound := peakGoroutines.Load(), int64(baseline+8*(slowRate+slowRate)); p > bound {
		t.Errorf("goroutines peaked at %d during the flood, want at most %d (baseline %d)", p, bound, baseline)
	}
	t.Logf("%d spoofed slow queries sent: %v dropped as unvalidated (each started an upstream request), %v answered 31 on the reader and dropped for amplification, %v for a full queue; trusted client: %d of %d answered; "+
		"%d upstream requests (at most %d at once); goroutines peaked at %d (baseline %d)",
		sent.Load(), unvalidated, inline, queueFull, answered, asked, slowRequests.Load(), slowPeak.Load(), peakGoroutines.Load(), baseline)
}
