// Command qosload measures QoS echo throughput and round-trip latency
// through gamegate's own UDP server and the Caddy + caddy-l4 path, against
// baselines measured in the same run on the same machine:
//
//   - bare: a plain Go net.UDPConn echo loop (one reader, ReadFrom,
//     WriteTo), the floor of what any UDP echo in Go costs;
//   - echo: caddy-l4's own built-in echo handler, the cost floor of the
//     caddy-l4 path (one goroutine per client address, a channel hop per
//     datagram);
//   - l4-qos: gamegate's qos handler (decoding, rate limiting, metrics,
//     encoding) behind the qos matcher in a caddy-l4 route;
//   - gg-qos-1: the same handler on gamegate's own UDP server with one
//     reader (recvmmsg/sendmmsg batches of 32);
//   - gg-qos: the same with the default readers (one per CPU, each on its
//     own SO_REUSEPORT socket).
//
// Each target gets the same closed-loop load: several client sockets, each
// keeping a fixed number of Unity-layout requests in flight. Targets are
// measured in rounds, in alternating order; each round's throughput is
// divided by the bare loop's and caddy-l4's of the same round, and the
// median and range of those ratios are reported with the machine's load
// average. Run it with
//
//	go run ./bench/qosload
//
// (see -h for the knobs). Everything listens on loopback.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
)

func main() {
	clients := flag.Int("clients", 8, "client sockets per target")
	inflight := flag.Int("inflight", 16, "requests in flight per client socket")
	duration := flag.Duration("duration", time.Second, "measuring time per target per round")
	rounds := flag.Int("rounds", 5, "rounds over all targets")
	pause := flag.Duration("pause", 2*time.Second, "idle time between rounds (the machine is shared)")
	jsonOut := flag.Bool("json", false, "print JSON")
	only := flag.String("only", "", "measure only this target, beside bare, echo and l4-qos (for profiling)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	traceOut := flag.String("trace", "", "write an execution trace of the measured rounds to this file (scheduling and network waits: go tool trace)")
	flag.Parse()

	bare, err := startBareEcho()
	if err != nil {
		fatal(err)
	}
	echoAddr, qosAddr, gg1Addr, ggAddr, err := startCaddy()
	if err != nil {
		fatal(err)
	}
	defer caddy.Stop() //nolint:errcheck

	targets := []*target{
		{name: "bare", addr: bare, echoOffset: requestCustomOffset},
		{name: "echo", addr: echoAddr, echoOffset: requestCustomOffset},
		{name: "l4-qos", addr: qosAddr, echoOffset: 2},
		{name: "gg-qos-1", addr: gg1Addr, echoOffset: 2},
		{name: "gg-qos", addr: ggAddr, echoOffset: 2},
	}
	if *only != "" {
		targets = slices.DeleteFunc(targets, func(t *target) bool {
			return t.name != *only && t.name != "bare" && t.name != "echo" && t.name != "l4-qos"
		})
	}
	// Warm up every path once before measuring.
	for _, t := range targets {
		if _, err := runLoad(t, *clients, *inflight, 500*time.Millisecond); err != nil {
			fatal(fmt.Errorf("%s: %w", t.name, err))
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			fatal(err)
		}
		if err := trace.Start(f); err != nil {
			fatal(err)
		}
		defer trace.Stop()
	}
	loads := benchutil.Rounds(*rounds, *pause, targets, func(_, _ int, t *target) {
		res, err := runLoad(t, *clients, *inflight, *duration)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", t.name, err))
		}
		t.add(res)
	})
	report(targets, *jsonOut, *clients, *inflight, *duration, *rounds, loads)
}

func fatal(err error) { benchutil.Fatal(err) }

const title = "QoS request"

// requestCustomOffset is where the custom data starts in a request; the
// echo baselines send the request back whole, so the timestamp is found there.
const requestCustomOffset = 3 + len(title)

func startBareEcho() (string, error) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return "", err
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return conn.LocalAddr().String(), nil
}

func startCaddy() (echoAddr, qosAddr, gg1Addr, ggAddr string, err error) {
	echoAddr, qosAddr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
	gg1Addr, ggAddr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
	return echoAddr, qosAddr, gg1Addr, ggAddr, benchutil.StartCaddy(fmt.Sprintf(`{
	layer4 {
		udp/%[1]s {
			route {
				echo
			}
		}
		udp/%[2]s {
			@qos qos
			route @qos {
				qos {
					rate 1000000000
					burst 1000000000
				}
			}
		}
	}
	gamegate {
		udp %[3]s {
			readers 1
			qos {
				rate 1000000000
				burst 1000000000
			}
		}
		udp %[4]s {
			qos {
				rate 1000000000
				burst 1000000000
			}
		}
	}
}
`, echoAddr, qosAddr, gg1Addr, ggAddr))
}

type target struct {
	name       string
	addr       string
	echoOffset int // where the echoed custom data starts in a response
	results    []loadResult
}

type loadResult struct {
	responses int
	lost      int
	elapsed   time.Duration
	rtts      []time.Duration
}

func (t *target) add(r loadResult) { t.results = append(t.results, r) }

// runLoad keeps inflight requests outstanding on each of clients sockets for
// d, and returns the responses counted, their round-trip times, and the
// requests never answered (sent minus answered, late answers included).
func runLoad(t *target, clients, inflight int, d time.Duration) (loadResult, error) {
	raddr, err := net.ResolveUDPAddr("udp", t.addr)
	if err != nil {
		return loadResult{}, err
	}
	start := time.Now()
	stopAt := start.Add(d)
	var wg sync.WaitGroup
	var total, lost, elapsed atomic.Int64 // elapsed: when the last client stopped sending
	rttsCh := make(chan []time.Duration, clients)
	errCh := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := net.DialUDP("udp", nil, raddr)
			if err != nil {
				errCh <- err
				return
			}
			defer conn.Close()
			req := make([]byte, 0, 64)
			sentN, received := 0, 0
			send := func(seq uint8) error {
				req = append(req[:0], 0x59, 0x00, byte(len(title)+1))
				req = append(req, title...)
				req = append(req, seq)
				req = binary.LittleEndian.AppendUint16(req, uint16(c))
				req = binary.LittleEndian.AppendUint64(req, uint64(time.Since(start)))
				_, err := conn.Write(req)
				if err == nil {
					sentN++
				}
				return err
			}
			for i := 0; i < inflight; i++ {
				if err := send(uint8(i)); err != nil {
					errCh <- err
					return
				}
			}
			rtts := make([]time.Duration, 0, 1<<16)
			buf := make([]byte, 2048)
			n := 0
			for time.Now().Before(stopAt) {
				_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				k, err := conn.Read(buf)
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						// Refill the window: whatever was outstanding is lost
						// or late.
						for i := 0; i < inflight; i++ {
							_ = send(uint8(i))
						}
						continue
					}
					errCh <- err
					return
				}
				off := t.echoOffset
				if k < off+11 {
					continue
				}
				received++
				sent := time.Duration(binary.LittleEndian.Uint64(buf[off+3:]))
				rtts = append(rtts, time.Since(start)-sent)
				n++
				if err := send(uint8(n)); err != nil {
					errCh <- err
					return
				}
			}
			for el := int64(time.Since(start)); ; {
				if cur := elapsed.Load(); el <= cur || elapsed.CompareAndSwap(cur, el) {
					break
				}
			}
			// Late answers count as received, not as answered in time.
			for received < sentN {
				_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := conn.Read(buf); err != nil {
					break
				}
				received++
			}
			lost.Add(int64(sentN - received))
			total.Add(int64(n))
			rttsCh <- rtts
		}(c)
	}
	wg.Wait()
	close(rttsCh)
	select {
	case err := <-errCh:
		return loadResult{}, err
	default:
	}
	res := loadResult{responses: int(total.Load()), lost: int(lost.Load()), elapsed: time.Duration(elapsed.Load())}
	for r := range rttsCh {
		res.rtts = append(res.rtts, r...)
	}
	// Let the servers' per-client associations drain before the next target.
	time.Sleep(100 * time.Millisecond)
	return res, nil
}

type summary struct {
	Target    string  `json:"target"`
	PerSecond float64 `json:"responses_per_second"`
	P50us     float64 `json:"rtt_p50_us"`
	P99us     float64 `json:"rtt_p99_us"`
	Lost      int     `json:"lost"`
	// Each round's throughput over the baseline's of the same round.
	VsBare  []float64 `json:"ratios_vs_bare"`
	VsEcho  []float64 `json:"ratios_vs_caddy_l4_echo"`
	VsL4QoS []float64 `json:"ratios_vs_caddy_l4_qos"`
}

func (r loadResult) rate() float64 { return float64(r.responses) / r.elapsed.Seconds() }

// ratios returns t's throughput over base's, round by round.
func ratios(t, base *target) []float64 {
	var xs []float64
	for i := range t.results {
		xs = append(xs, t.results[i].rate()/base.results[i].rate())
	}
	return xs
}

func summarize(t *target) summary {
	var responses, lost int
	var elapsed time.Duration
	var rtts []time.Duration
	for _, r := range t.results {
		responses += r.responses
		lost += r.lost
		elapsed += r.elapsed
		rtts = append(rtts, r.rtts...)
	}
	rtts = benchutil.Sorted(rtts)
	return summary{
		Target:    t.name,
		PerSecond: float64(responses) / elapsed.Seconds(),
		P50us:     benchutil.Percentile(rtts, 0.50),
		P99us:     benchutil.Percentile(rtts, 0.99),
		Lost:      lost,
	}
}

func report(targets []*target, asJSON bool, clients, inflight int, d time.Duration, rounds int, loads []string) {
	var sums []summary
	for _, t := range targets {
		s := summarize(t)
		s.VsBare, s.VsEcho, s.VsL4QoS = ratios(t, targets[0]), ratios(t, targets[1]), ratios(t, targets[2])
		sums = append(sums, s)
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{
			"clients": clients, "inflight": inflight, "duration": d.String(), "rounds": rounds,
			"load_average_1min": loads, "cpus": runtime.NumCPU(), "targets": sums,
		})
		return
	}
	fmt.Printf("%s: %d client sockets × %d requests in flight, %d rounds × %v per target\n",
		time.Now().UTC().Format(time.RFC3339), clients, inflight, rounds, d)
	fmt.Printf("load average (1 min) before the rounds and after each: %s (%d CPUs)\n", strings.Join(loads, ", "), runtime.NumCPU())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tRESPONSES/S\tRTT P50\tRTT P99\tLOST\tVS BARE: MEDIAN (RANGE)\tVS CADDY-L4 ECHO\tVS CADDY-L4 QOS")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0fµs\t%.0fµs\t%d\t%s\t%s\t%s\n", s.Target, s.PerSecond, s.P50us, s.P99us, s.Lost,
			benchutil.FormatSpread(s.VsBare), benchutil.FormatSpread(s.VsEcho), benchutil.FormatSpread(s.VsL4QoS))
	}
	tw.Flush()
}
