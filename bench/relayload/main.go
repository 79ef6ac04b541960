// Command relayload measures messages forwarded between two loopback
// clients per second, and their round-trip time, through:
//
//   - direct: no forwarder at all (the clients' own cost, for reference);
//   - bare: a plain Go UDP forwarder (one goroutine, ReadFrom/WriteTo);
//   - proxy: caddy-l4's own UDP proxy route;
//   - relay: gamegate's layer4 relay (bound, connected allocations; RELAY
//     messages forwarded unchanged).
//
// Client A keeps a window of messages in flight to B, which sends each one
// straight back, so every round trip is two forwarded messages. Every target
// carries datagrams of the same size (a RELAY of -size content bytes), in
// interleaved rounds; results are reported as ratios. Run it with
//
//	go run ./bench/relayload
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/handlers/relay"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

const secret = "relayload-secret-0123456789abcdef"

func main() {
	window := flag.Int("window", 32, "messages in flight")
	size := flag.Int("size", 100, "content bytes per message")
	duration := flag.Duration("duration", 3*time.Second, "measuring time per target per round")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	only := flag.String("only", "", "measure only this target (for profiling)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	flag.Parse()

	relayAddr, proxyAddr := benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
	// B listens on a fixed port so that the proxy route can name it.
	bConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		benchutil.Fatal(err)
	}
	aConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		benchutil.Fatal(err)
	}
	if err := benchutil.StartCaddy(fmt.Sprintf(`{
	layer4 {
		udp/%s {
			route {
				relay {
					secrets %s
				}
			}
		}
		udp/%s {
			route {
				proxy udp/%s
			}
		}
	}
}
`, relayAddr, secret, proxyAddr, bConn.LocalAddr())); err != nil {
		benchutil.Fatal(err)
	}
	defer caddy.Stop() //nolint:errcheck
	bare := startBareForwarder(aConn.LocalAddr().(*net.UDPAddr), bConn.LocalAddr().(*net.UDPAddr))

	aID, bID := bindPair(aConn, bConn, relayAddr)
	msg, _ := (&wirerelay.Relay{From: aID, To: bID, Content: make([]byte, *size)}).AppendTo(nil)
	reply, _ := (&wirerelay.Relay{From: bID, To: aID, Content: make([]byte, *size)}).AppendTo(nil)

	type target struct {
		name    string
		to, bTo string // where A sends, and where B answers (empty: the sender)
		relay   bool
		res     []result
	}
	targets := []*target{
		{name: "direct", to: bConn.LocalAddr().String(), bTo: aConn.LocalAddr().String()},
		{name: "bare", to: bare},
		{name: "proxy", to: proxyAddr},
		{name: "relay", to: relayAddr, relay: true},
	}
	run := func(t *target, d time.Duration) result {
		return measure(aConn, bConn, t.to, t.bTo, msg, reply, t.relay, *window, d)
	}
	if *only != "" {
		var kept []*target
		for _, t := range targets {
			if t.name == *only || t.name == "bare" || t.name == "proxy" {
				kept = append(kept, t)
			}
		}
		targets = kept
	}
	for _, t := range targets {
		run(t, 300*time.Millisecond) // warm up
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			benchutil.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			benchutil.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for range *rounds {
		for _, t := range targets {
			t.res = append(t.res, run(t, *duration))
		}
	}

	fmt.Printf("one client pair, %d messages in flight, %d-byte datagrams, %d rounds × %v per target\n", *window, len(msg), *rounds, *duration)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tFORWARDED/S\tRTT P50\tRTT P99\tLOST\tVS BARE\tVS CADDY-L4 PROXY")
	sums := map[string]summary{}
	for _, t := range targets {
		sums[t.name] = summarize(t.res)
	}
	for _, t := range targets {
		s := sums[t.name]
		fmt.Fprintf(tw, "%s\t%.0f\t%.0fµs\t%.0fµs\t%d\t%.3f×\t%.3f×\n", t.name, s.forwarded, s.p50, s.p99, s.lost,
			s.forwarded/sums["bare"].forwarded, s.forwarded/sums["proxy"].forwarded)
	}
	tw.Flush()
	fmt.Printf("added round-trip latency of the relay over the bare forwarder: p50 %+.0fµs, p99 %+.0fµs\n",
		sums["relay"].p50-sums["bare"].p50, sums["relay"].p99-sums["bare"].p99)
}

// startBareForwarder forwards every datagram from a to b and from b to a.
func startBareForwarder(a, b *net.UDPAddr) string {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		benchutil.Fatal(err)
	}
	ap, bp := a.AddrPort(), b.AddrPort()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			to := bp
			if from == bp {
				to = ap
			}
			_, _ = conn.WriteToUDPAddrPort(buf[:n], to)
		}
	}()
	return conn.LocalAddr().String()
}

// bindPair binds A and B to the relay (B as the host) and connects A to B.
func bindPair(aConn, bConn *net.UDPConn, relayAddr string) (wirerelay.AllocationID, wirerelay.AllocationID) {
	sealer, err := relay.NewSealer([]byte(secret))
	if err != nil {
		benchutil.Fatal(err)
	}
	ra, _ := net.ResolveUDPAddr("udp", relayAddr)
	var ids [2]wirerelay.AllocationID
	var datas [2][]byte
	for i, c := range []*net.UDPConn{aConn, bConn} {
		alloc, _ := relay.NewAllocation(1, "bench", time.Now().Add(time.Hour))
		data, _ := sealer.Seal(alloc)
		ids[i], datas[i] = alloc.ID, data
		m := wirerelay.Bind{ConnectionData: data}
		if err := m.Sign(alloc.Key[:], wirerelay.Options{Padded: true}); err != nil {
			benchutil.Fatal(err)
		}
		b, _ := m.AppendShipped(nil)
		expect(c, ra, b, wirerelay.TypeBindReceived)
	}
	req, _ := (&wirerelay.ConnectRequest{AllocationID: ids[0], ToConnectionData: datas[1]}).AppendShipped(nil)
	expect(aConn, ra, req, wirerelay.TypeAccepted)
	return ids[0], ids[1]
}

func expect(c *net.UDPConn, to *net.UDPAddr, msg []byte, want wirerelay.Type) {
	buf := make([]byte, 2048)
	for range 20 {
		_, _ = c.WriteToUDP(msg, to)
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := c.ReadFromUDP(buf)
		if err == nil {
			if t, _ := wirerelay.PeekHeader(buf[:n]); t == want {
				return
			}
		}
	}
	benchutil.Fatal(fmt.Errorf("no %v from the relay", want))
}

type result struct {
	roundTrips int
	lost       int
	elapsed    time.Duration
	rtts       []time.Duration
}

type summary struct {
	forwarded, p50, p99 float64
	lost                int
}

func summarize(rs []result) summary {
	var s summary
	var rtts []time.Duration
	var el time.Duration
	n := 0
	for _, r := range rs {
		n += r.roundTrips
		s.lost += r.lost
		el += r.elapsed
		rtts = append(rtts, r.rtts...)
	}
	rtts = benchutil.Sorted(rtts)
	s.forwarded = 2 * float64(n) / el.Seconds()
	s.p50, s.p99 = benchutil.Percentile(rtts, 0.5), benchutil.Percentile(rtts, 0.99)
	return s
}

// measure runs A's closed loop against one target for d. B answers each
// message with reply (carrying A's sequence and timestamp), to bTo if set,
// else to where the message came from.
func measure(aConn, bConn *net.UDPConn, to, bTo string, msg, reply []byte, isRelay bool, window int, d time.Duration) result {
	dst, _ := net.ResolveUDPAddr("udp", to)
	var bDst *net.UDPAddr
	if bTo != "" {
		bDst, _ = net.ResolveUDPAddr("udp", bTo)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The payload's first 12 bytes (after the RELAY header) carry a
	// sequence and a send time.
	const off = wirerelay.HeaderLen + 16 + 16 + 2
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		buf := make([]byte, 2048)
		out := append([]byte(nil), reply...)
		for ctx.Err() == nil {
			_ = bConn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			n, from, err := bConn.ReadFromUDP(buf)
			if err != nil {
				continue
			}
			if n < off+12 {
				continue
			}
			copy(out[off:off+12], buf[off:off+12])
			if !isRelay {
				out = append(out[:0], buf[:n]...) // raw forwarders: echo as is
			}
			target := from
			if bDst != nil {
				target = bDst
			}
			_, _ = bConn.WriteToUDP(out, target)
		}
	}()
	start := time.Now()
	var res result
	out := append([]byte(nil), msg...)
	send := func(seq uint32) {
		binary.BigEndian.PutUint32(out[off:], seq)
		binary.BigEndian.PutUint64(out[off+4:], uint64(time.Since(start)))
		_, _ = aConn.WriteToUDP(out, dst)
	}
	seq := uint32(0)
	for ; seq < uint32(window); seq++ {
		send(seq)
	}
	buf := make([]byte, 2048)
	stop := start.Add(d)
	for time.Now().Before(stop) {
		_ = aConn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := aConn.ReadFromUDP(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				res.lost += window // refill the window
				for range window {
					send(seq)
					seq++
				}
			}
			continue
		}
		if n < off+12 {
			continue
		}
		res.rtts = append(res.rtts, time.Since(start)-time.Duration(binary.BigEndian.Uint64(buf[off+4:])))
		res.roundTrips++
		send(seq)
		seq++
	}
	res.elapsed = time.Since(start)
	cancel()
	<-bDone
	// Drain what is still in flight before the next target.
	_ = aConn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	for {
		if _, _, err := aConn.ReadFromUDP(buf); err != nil {
			break
		}
	}
	return res
}
