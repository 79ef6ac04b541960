package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/gqp"
	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// udpAppCaddyfile serves QoS, relay and GQP on one port of gamegate's own
// UDP server, and the relay allocations API over HTTP.
func udpAppCaddyfile(addr, httpAddr, qosOptions string) string {
	if qosOptions == "" {
		qosOptions = "rate 100\nburst 100"
	}
	qosOptions = "\n\t\t\t\t" + strings.ReplaceAll(qosOptions, "\n", "\n\t\t\t\t")
	return fmt.Sprintf(`{
	gamegate {
		udp %s {
			readers 2
			qos {%s
			}
			relay {
				secrets {env.GAMEGATE_TEST_RELAY_SECRET}
			}
			gqp {
				identify flood-test 1.0 1
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
`, addr, qosOptions, httpAddr)
}

type udpAppEnv struct {
	relayEnv
}

func startUDPApp(t *testing.T, qosOptions string) *udpAppEnv {
	t.Helper()
	t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
	env := &udpAppEnv{relayEnv{addr: testutil.FreeUDPAddr(t)}}
	env.cfg = udpAppCaddyfile(env.addr, testutil.FreeTCPAddr(t), qosOptions)
	env.caddy = testcaddy.Start(t, env.cfg)
	var err error
	if env.sealer, err = relay.NewSealer([]byte(relaySecret)); err != nil {
		t.Fatal(err)
	}
	return env
}

// gqpMotd asks the server for its motd with a fresh client socket and
// reports whether the right answer came back within timeout.
func gqpMotd(addr string, timeout time.Duration) bool {
	c := gqp.Client{Timeout: timeout, Retries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.Query(ctx, addr, &wiregqp.Query{Commands: []wiregqp.Command{{Name: []byte("motd")}}})
	if err != nil || len(resp.Replies) != 1 || resp.Replies[0].Status != wiregqp.StatusOK || len(resp.Replies[0].Records) != 1 {
		return false
	}
	r := resp.Replies[0].Records[0]
	return string(r.Label) == "message" && len(r.Items) == 1 && string(r.Items[0]) == "hello"
}

// qosAnswered sends Unity-layout requests from c until one is answered
// within timeout.
func qosAnswered(c *testutil.UDPClient, id uint16, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for seq := uint8(0); time.Now().Before(deadline); seq++ {
		c.Send(unityRequest(seq, id, uint64(seq)))
		if b, ok := c.Recv(min(100*time.Millisecond, time.Until(deadline))); ok && len(b) >= 3 && b[0] == 0x95 {
			return true
		}
	}
	return false
}

// relayEchoed sends one message from joiner to host and waits for the
// host's echo (the host runs echoHost) within timeout.
func relayEchoed(joiner *relay.Client, host wirerelay.AllocationID, seq uint32, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if err := joiner.Send(host, payload(9, seq)); err != nil {
			return false
		}
		rctx, rcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		m, err := joiner.Receive(rctx)
		rcancel()
		if err == nil && bytes.Equal(m.Content, payload(9, seq)) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

func TestUDPAppServesQoSRelayGQPOnOnePort(t *testing.T) {
	env := startUDPApp(t, "")
	qc := testutil.DialUDP(t, "127.0.0.1:0", env.addr)
	if !qosAnswered(qc, 1, replyTimeout) {
		t.Fatal("QoS request not answered")
	}
	_, joiner, hostAlloc := env.echoingPair(t)
	if err := exchange(joiner, hostAlloc.ID, 1, 0, 500, 64); err != nil {
		t.Fatal(err)
	}
	if !gqpMotd(env.addr, replyTimeout) {
		t.Fatal("GQP motd not answered")
	}
	// A datagram no protocol claims is dropped and counted.
	before := env.caddy.MustMetric(t, `gamegate_udp_dropped_total{listener="`+env.addr+`",reason="no_protocol"}`)
	junk := testutil.DialUDP(t, "127.0.0.1:0", env.addr)
	junk.Send([]byte("no protocol starts like this"))
	testutil.WaitFor(t, "the drop to be counted", func() bool {
		return env.caddy.MustMetric(t, `gamegate_udp_dropped_total{listener="`+env.addr+`",reason="no_protocol"}`) > before
	})
}

// flood sends random and near-valid datagrams of 1-9000 bytes at addr from
// many sockets (ports) on many 127.x.y.z addresses until ctx ends, and
// returns how many it sent.
func flood(ctx context.Context, t *testing.T, addr string, sockets int) int64 {
	t.Helper()
	to := netip.MustParseAddrPort(addr)
	conns := make([]*net.UDPConn, 0, sockets)
	for i := range sockets {
		ip := netip.AddrFrom4([4]byte{127, byte(1 + i%200), byte(i / 200), byte(1 + i%250)})
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Valid messages of each protocol: sent as they are (a quarter of the
	// time, so that each protocol's engine works, not only its matcher) or
	// as the start of a longer, random datagram.
	prefixes := [][]byte{
		unityRequest(1, 1, 1),                      // a QoS request
		{0xDA, 0x72, 0, byte(wirerelay.TypeRelay)}, // relay headers
		{0xDA, 0x72, 0, byte(wirerelay.TypeBind)},
		{0xDA, 0x72, 0, byte(wirerelay.TypePing)},
		testutil.Encode(t, wiregqp.QueryOf("motd")), testutil.Encode(t, wiregqp.QueryOf("identify")),
		testutil.Encode(t, wiregqp.QueryOf("challenge", "x", "y")), testutil.Encode(t, wiregqp.QueryOf("echo", "a", "b")),
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			noise := make([]byte, 64<<10)
			for j := range noise {
				noise[j] = byte(rng.Uint32())
			}
			buf := make([]byte, 9000)
			for i := w; ctx.Err() == nil; i += 2 {
				n := 1 + rng.IntN(9000)
				if rng.IntN(2) == 0 {
					n = 1 + rng.IntN(1500)
				}
				b := buf[:n]
				copy(b, noise[rng.IntN(len(noise)-9000):])
				if p := prefixes[rng.IntN(len(prefixes)+2)%len(prefixes)]; rng.IntN(3) > 0 {
					if rng.IntN(4) == 0 {
						b = b[:len(p)]
					}
					copy(b, p)
				}
				if _, err := conns[i%len(conns)].WriteToUDPAddrPort(b, to); err == nil {
					sent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return sent.Load()
}

// TestUDPAppFlood floods one port serving QoS, relay and GQP while a QoS
// client, a relay host and joiner, and a GQP client keep using it. Each is
// answered within 1 s of the flood ending; goroutines return to their
// baseline and the heap stays bounded.
func TestUDPAppFlood(t *testing.T) {
	if runIsolated(t) {
		return
	}
	// The clients ask far more often than a player would: let them.
	env := startUDPApp(t, "rate 10000\nburst 10000\nmax_sources 20000")
	_, joiner, hostAlloc := env.echoingPair(t)
	ctx := t.Context()
	qc := testutil.DialUDP(t, "127.0.0.1:0", env.addr)
	if !qosAnswered(qc, 1, replyTimeout) || !relayEchoed(joiner, hostAlloc.ID, 0, replyTimeout) || !gqpMotd(env.addr, replyTimeout) {
		t.Fatal("a client was not answered before the flood")
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()

	// The valid clients keep working through the flood.
	var peakHeap atomic.Uint64
	var answered [3]atomic.Int64
	fctx, fcancel := context.WithTimeout(ctx, 4*time.Second)
	defer fcancel()
	var clients sync.WaitGroup
	clients.Add(1)
	go func() {
		defer clients.Done()
		var ms runtime.MemStats
		for seq := uint32(1); fctx.Err() == nil; seq++ {
			if qosAnswered(qc, uint16(seq), 200*time.Millisecond) {
				answered[0].Add(1)
			}
			if relayEchoed(joiner, hostAlloc.ID, seq, 200*time.Millisecond) {
				answered[1].Add(1)
			}
			if gqpMotd(env.addr, 200*time.Millisecond) {
				answered[2].Add(1)
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
		}
	}()
	sent := flood(fctx, t, env.addr, 1200)
	clients.Wait()
	ended := time.Now()

	// After the flood: every client is answered within 1 s.
	if !qosAnswered(qc, 60000, time.Second) {
		t.Fatalf("QoS client not answered within 1 s of the flood ending (bans %v, drops for bans %v)",
			env.caddy.MustMetric(t, `gamegate_qos_bans_total{cause="rate",listener="`+env.addr+`"}`), env.caddy.MustMetric(t, `gamegate_qos_dropped_total{listener="`+env.addr+`",reason="banned"}`))
	}
	if !relayEchoed(joiner, hostAlloc.ID, 1<<20, time.Second) {
		t.Fatal("relay joiner not echoed within 1 s of the flood ending")
	}
	if !gqpMotd(env.addr, time.Second) {
		t.Fatal("GQP client not answered within 1 s of the flood ending")
	}
	recovered := time.Since(ended)

	// Goroutines back to the baseline (the flood's own are gone).
	var now int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if now = runtime.NumGoroutine(); now <= baseline+5 {
			break
		}
	}
	if now > baseline+5 {
		t.Fatalf("goroutines after the flood: %d, baseline %d", now, baseline)
	}
	const heapBound = 64 << 20
	if p := peakHeap.Load(); p > heapBound {
		t.Fatalf("heap in use peaked at %d MiB during the flood, want under %d MiB", p>>20, heapBound>>20)
	}
	received := env.caddy.MustMetric(t, `gamegate_udp_datagrams_total{listener="`+env.addr+`"}`)
	t.Logf("flood: %d datagrams sent from 1200 sockets on 1200 loopback addresses, %v read by the server; "+
		"answered during the flood: QoS %d, relay %d, GQP %d; all three answered %v after it ended; "+
		"goroutines %d (baseline %d); peak heap in use %d MiB (bound %d MiB)",
		sent, received, answered[0].Load(), answered[1].Load(), answered[2].Load(), recovered.Round(time.Millisecond),
		now, baseline, peakHeap.Load()>>20, heapBound>>20)
}

// TestUDPAppScale sends one datagram from each of 50,000 distinct sources
// (127/8 addresses) per protocol and measures what each source costs: no
// goroutine, and only the protocols' own table entries.
func TestUDPAppScale(t *testing.T) {
	if runIsolated(t) {
		return
	}
	const sources = 50_000
	// One request leaves a source's bucket short for 100 s at this rate, so
	// the table's sweep (every 10 s, of sources whose bucket is full) keeps
	// every source for the test's measurement however slow the machine.
	env := startUDPApp(t, "rate 0.01\nburst 100\nmax_sources 100000")
	to := netip.MustParseAddrPort(env.addr)
	qc := testutil.DialUDP(t, "127.0.0.1:0", env.addr)
	if !qosAnswered(qc, 1, replyTimeout) || !gqpMotd(env.addr, replyTimeout) {
		t.Fatal("not answered before the test")
	}
	goroutines := runtime.NumGoroutine()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	sendFromEach := func(datagram []byte, counted func() float64) (perSource float64) {
		before, countBefore := heap(), counted()
		for i := range sources {
			ip := netip.AddrFrom4([4]byte{127, byte(2 + i>>16), byte(i >> 8), byte(i)})
			c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.WriteToUDPAddrPort(datagram, to); err != nil {
				t.Fatal(err)
			}
			c.Close()
			if i%2000 == 1999 { // let the server keep up rather than lose datagrams to a full buffer
				testutil.WaitFor(t, "the server to catch up", func() bool { return counted()-countBefore >= float64(i+1)*0.99 })
			}
		}
		testutil.WaitFor(t, "every datagram to be handled", func() bool { return counted()-countBefore >= sources*0.99 })
		// A few goroutines come and go with the metrics scrapes' HTTP
		// connections; one per source would be thousands.
		if n := runtime.NumGoroutine(); n > goroutines+6 {
			t.Fatalf("goroutines: %d after %d sources, %d before", n, sources, goroutines)
		}
		return (float64(heap()) - float64(before)) / sources
	}
	qosRequests := func() float64 { return env.caddy.MustMetric(t, `gamegate_qos_requests_total{listener="`+env.addr+`"}`) }
	qosPer := sendFromEach(unityRequest(1, 1, 1), qosRequests)
	if tracked := env.caddy.MustMetric(t, "gamegate_qos_tracked_sources"); tracked < sources*0.99 {
		t.Fatalf("QoS tracked %v sources, want about %d", tracked, sources)
	}
	relayIn := func() float64 {
		return env.caddy.MustMetric(t, `gamegate_udp_datagrams_total{listener="`+env.addr+`"}`)
	}
	ping := wirerelay.Ping{}
	ping.AllocationID[0] = 1
	pingBytes, _ := ping.AppendTo(nil)
	relayPer := sendFromEach(pingBytes, relayIn)
	gqpIn := func() float64 { return env.caddy.MustMetric(t, `gamegate_gqp_queries_total{outcome="answered"}`) }
	gqpPer := sendFromEach(testutil.Encode(t, wiregqp.QueryOf("identify")), gqpIn)
	const qosBound, relayBound, gqpBound = 300, 64, 64
	t.Logf("bytes of heap per source, %d sources each: QoS %.0f (bound %d), relay %.0f (bound %d), GQP %.0f (bound %d); goroutines %d throughout",
		sources, qosPer, qosBound, relayPer, relayBound, gqpPer, gqpBound, runtime.NumGoroutine())
	if qosPer > qosBound || relayPer > relayBound || gqpPer > gqpBound {
		t.Fatal("a protocol costs more per source than its bound")
	}
}

// TestUDPAppReloads reloads the configuration 10 times through the admin
// API while relay and QoS traffic flows: no binding is lost, a QoS ban
// stays in force, and the goroutine count stays flat.
func TestUDPAppReloads(t *testing.T) {
	if runIsolated(t) {
		return
	}
	env := startUDPApp(t, "")
	host, joiner, hostAlloc := env.echoingPair(t)
	ctx := t.Context()

	// A QoS source that goes over its burst (100) is banned.
	// (QoS sources are addresses by default: it has one of its own.)
	banned := testutil.DialUDP(t, "127.0.0.3:0", env.addr)
	for i := range 150 {
		banned.Send(unityRequest(uint8(i), 7, uint64(i)))
	}
	testutil.WaitFor(t, "the ban", func() bool {
		return env.caddy.MustMetric(t, `gamegate_qos_bans_total{cause="rate",listener="`+env.addr+`"}`) >= 1
	})

	cfgJSON, err := json.Marshal(testcaddy.AdaptCaddyfile(t, env.cfg))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	_ = json.Unmarshal(cfgJSON, &cfg)
	cfg["admin"] = map[string]any{"listen": env.caddy.AdminAddr, "config": map[string]any{"persist": false}}
	cfg["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}}
	body, _ := json.Marshal(cfg)

	// Traffic through every reload: the joiner streams and checks echoes,
	// and a QoS client keeps asking.
	traffic := make(chan error, 1)
	tctx, tcancel := context.WithCancel(ctx)
	go func() {
		var seq uint32
		for ; tctx.Err() == nil; seq += 50 {
			if err := exchange(joiner, hostAlloc.ID, 2, seq, 50, 8); err != nil {
				traffic <- err
				return
			}
		}
		traffic <- nil
	}()
	qc := testutil.DialUDP(t, "127.0.0.4:0", env.addr)
	var counts []int
	for i := range 10 {
		req, _ := http.NewRequest(http.MethodPost, "http://"+env.caddy.AdminAddr+"/load", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reload %d: status %d", i, resp.StatusCode)
		}
		if !qosAnswered(qc, uint16(i), replyTimeout) {
			t.Fatalf("QoS not answered after reload %d", i)
		}
		runtime.GC()
		counts = append(counts, runtime.NumGoroutine())
	}
	tcancel()
	if err := <-traffic; err != nil {
		t.Fatalf("relay traffic across reloads: %v", err)
	}
	if n := env.caddy.MustMetric(t, "gamegate_relay_bindings"); n != 2 {
		t.Fatalf("bindings after 10 reloads: got %v, want 2", n)
	}
	if joiner.Rebinds() != 0 || host.Rebinds() != 0 {
		t.Fatalf("re-binds across reloads: joiner %d host %d, want none", joiner.Rebinds(), host.Rebinds())
	}
	// The banned source is still ignored: its request goes unanswered and
	// counts as dropped for the ban.
	for { // the answers to its burst
		if _, ok := banned.Recv(50 * time.Millisecond); !ok {
			break
		}
	}
	droppedBefore := env.caddy.MustMetric(t, `gamegate_qos_dropped_total{listener="`+env.addr+`",reason="banned"}`)
	banned.Send(unityRequest(1, 7, 1))
	testutil.WaitFor(t, "the banned source's request to be dropped", func() bool {
		return env.caddy.MustMetric(t, `gamegate_qos_dropped_total{listener="`+env.addr+`",reason="banned"}`) > droppedBefore
	})
	if b, ok := banned.Recv(200 * time.Millisecond); ok {
		t.Fatalf("a banned source was answered after the reloads: %x", b)
	}
	first, last := counts[0], counts[len(counts)-1]
	if last > first+4 {
		t.Fatalf("goroutines grew across reloads: %v", counts)
	}
	t.Logf("10 reloads through the admin API during relay and QoS traffic: 2 bindings kept, 0 re-binds, ban kept; goroutines after each reload %v", counts)
}

// TestLayer4UDPFloodDeadlock shows the fault gamegate's UDP server avoids:
// the same flood at a caddy-l4 UDP route leaves the port answering nothing,
// for good. The flood comes in rounds of 2 s (at most 15) until a fresh
// client goes unanswered; the test fails if that never happens, or if the
// port answers again 3 s later. It leaves caddy-l4's goroutines blocked, so
// it runs only when asked, alone in a child process that a timeout bounds:
// GAMEGATE_L4_FLOOD=1 go test ./tests -run TestLayer4UDPFloodDeadlock -v
func TestLayer4UDPFloodDeadlock(t *testing.T) {
	if os.Getenv("GAMEGATE_L4_FLOOD") == "" {
		t.Skip("set GAMEGATE_L4_FLOOD=1 to run; it leaves caddy-l4's UDP server deadlocked")
	}
	if runIsolated(t) {
		return
	}
	addr := testutil.FreeUDPAddr(t)
	testcaddy.Start(t, qosCaddyfile(addr, "rate 100\n\t\t\t\t\tburst 100"))
	qc := testutil.DialUDP(t, "127.0.0.1:0", addr)
	if !qosAnswered(qc, 1, replyTimeout) {
		t.Fatal("QoS not answered before the flood")
	}
	// Few sources, so that a source sends again before the dispatcher has
	// removed its ended association; the fault is a race, so the rounds try
	// several counts.
	sourceCounts := []int{8, 4, 2}
	var sent int64
	rounds, dead := 0, false
	start := time.Now()
	for rounds < 15 && !dead {
		fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		sent += flood(fctx, t, addr, sourceCounts[rounds%len(sourceCounts)])
		cancel()
		rounds++
		dead = !qosAnswered(testutil.DialUDP(t, "127.0.0.1:0", addr), uint16(rounds), time.Second)
	}
	flooded := time.Since(start)
	if !dead {
		t.Fatalf("caddy-l4's UDP server still answered after %d rounds of flood (%d datagrams); the deadlock did not occur", rounds, sent)
	}
	// It stays dead with no flood at all.
	time.Sleep(3 * time.Second) // the passing of time is what is tested
	if qosAnswered(testutil.DialUDP(t, "127.0.0.1:0", addr), 100, 2*time.Second) {
		t.Fatal("caddy-l4's UDP server answered again 3 s after the flood; it was overloaded, not deadlocked")
	}
	// The dispatcher waits to hand a datagram to an association that no
	// longer reads (layer4/server.go:178), while associations wait to send
	// their close notice to that dispatcher (server.go:367, :385).
	dispatcher := goroutinesBlocked("chan send", "github.com/mholt/caddy-l4/layer4.(*Server).servePacket")
	closers := goroutinesBlocked("chan send", "github.com/mholt/caddy-l4/layer4.(*packetConn).Read", "github.com/mholt/caddy-l4/layer4.(*packetConn).Close")
	if dispatcher != 1 {
		t.Fatalf("caddy-l4 dispatchers blocked sending to an association: got %d, want 1", dispatcher)
	}
	t.Logf("caddy-l4 UDP route flooded by %d sources in the last of %d rounds (%d datagrams in %v): no answer, and still none 3 s later; dispatcher blocked on an association's queue, %d associations blocked on their close notice",
		sourceCounts[(rounds-1)%len(sourceCounts)], rounds, sent, flooded.Round(100*time.Millisecond), closers)
}

// goroutinesBlocked counts goroutines waiting in state (as a goroutine dump
// names it, "chan send") whose stack has any of the frames.
func goroutinesBlocked(state string, frames ...string) int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	n := 0
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(header, "["+state) {
			continue
		}
		for _, f := range frames {
			if strings.Contains(g, f+"(") {
				n++
				break
			}
		}
	}
	return n
}

// echoingPair binds a host and a joiner connected to it; the host echoes
// every message back until the test ends.
func (env *relayEnv) echoingPair(t *testing.T) (host, joiner *relay.Client, hostAlloc *relay.Allocation) {
	t.Helper()
	host, hostAlloc, hostData := env.dial(t, 2)
	joiner, _, _ = env.dial(t, 2)
	if _, err := connectTo(t, joiner, hostData); err != nil {
		t.Fatal(err)
	}
	echoHost(t.Context(), t, host)
	return host, joiner, hostAlloc
}

// Each UDP listener of the gamegate app logs one line when it serves: its
// address, protocols, readers and the socket buffers asked and granted.
func TestUDPAppLogsEachListenerOnce(t *testing.T) {
	first, second := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	c := testcaddy.StartLogged(t, fmt.Sprintf(`{
	admin off
	gamegate {
		udp %s {
			readers 2
			read_buffer 1MiB
			write_buffer 512KiB
			qos
			gqp {
				identify log-test 1.0 1
			}
		}
		udp %s {
			readers 1
			qos
		}
	}
}
`, first, second))
	lines := map[string][]map[string]any{}
	for _, e := range c.Logs(t) {
		if e["msg"] == "serving UDP" {
			addr, _ := e["address"].(string)
			lines[addr] = append(lines[addr], e)
		}
	}
	if len(lines) != 2 || len(lines[first]) != 1 || len(lines[second]) != 1 {
		t.Fatalf("serving UDP lines by address: %v; want one for %s and one for %s", lines, first, second)
	}
	e := lines[first][0]
	protocols, _ := json.Marshal(e["protocols"])
	if string(protocols) != `["qos","gqp"]` || e["readers"] != float64(2) ||
		e["read_buffer"] != float64(1<<20) || e["write_buffer"] != float64(512<<10) {
		t.Fatalf("line for %s: %v", first, e)
	}
	for _, k := range []string{"read_buffer_granted", "write_buffer_granted"} {
		if v, ok := e[k].(float64); !ok || v <= 0 {
			t.Fatalf("line for %s: %s = %v, want what the kernel granted", first, k, e[k])
		}
	}
	t.Logf("%v", e)
}
