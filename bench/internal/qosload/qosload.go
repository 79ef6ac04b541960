// Package qosload measures QoS echo throughput and round-trip latency
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
// divided by the bare loop's and caddy-l4's of the same round. Everything
// listens on loopback. The command is bench/qosload; bench/run runs it too.
package qosload

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
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

// Config is one run's load and rounds.
type Config struct {
	Clients    int           // client sockets per target
	Inflight   int           // requests in flight per client socket
	Duration   time.Duration // measuring time per target per round
	Rounds     int           // rounds over all targets
	Pause      time.Duration // idle time between rounds (the machine is shared)
	Warmup     time.Duration // load on every target before the rounds
	Only       string        // measure only this target, beside bare, echo and l4-qos
	CPUProfile string        // write a CPU profile of the measured rounds here
	Trace      string        // write an execution trace of the measured rounds here
}

// Result is what a run measured.
type Result struct {
	Config  Config
	Targets []*target
	Loads   []string // load average before the rounds and after each
	At      time.Time
}

// Run starts the baselines and gamegate's paths in this process, measures
// them and stops them.
func Run(cfg Config) (*Result, error) {
	bare, err := benchutil.ListenEcho()
	if err != nil {
		return nil, err
	}
	defer bare.Close()
	echoAddr, qosAddr, gg1Addr, ggAddr, err := startCaddy()
	if err != nil {
		return nil, err
	}
	defer caddy.Stop() //nolint:errcheck

	targets := []*target{
		{name: "bare", label: "bare Go echo loop", addr: bare.LocalAddr().String(), echoOffset: requestCustomOffset},
		{name: "echo", label: "caddy-l4 `echo`", addr: echoAddr, echoOffset: requestCustomOffset},
		{name: "l4-qos", label: "layer4 `qos` route", addr: qosAddr, echoOffset: 2},
		{name: "gg-qos-1", label: "gamegate app `qos`, 1 reader", addr: gg1Addr, echoOffset: 2},
		{name: "gg-qos", label: "gamegate app `qos`, default readers", addr: ggAddr, echoOffset: 2},
	}
	if cfg.Only != "" {
		targets = slices.DeleteFunc(targets, func(t *target) bool {
			return t.name != cfg.Only && t.name != "bare" && t.name != "echo" && t.name != "l4-qos"
		})
	}
	// Warm up every path once before measuring.
	for _, t := range targets {
		if _, err := runLoad(t, cfg.Clients, cfg.Inflight, cfg.Warmup); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	stopProfile, err := benchutil.StartCPUProfile(cfg.CPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	if cfg.Trace != "" {
		f, err := os.Create(cfg.Trace)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return nil, err
		}
		defer trace.Stop()
	}
	var runErr error
	loads := benchutil.Rounds(cfg.Rounds, cfg.Pause, targets, func(_, _ int, t *target) {
		if runErr != nil {
			return
		}
		res, err := runLoad(t, cfg.Clients, cfg.Inflight, cfg.Duration)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", t.name, err)
		}
		t.add(res)
	})
	if runErr != nil {
		return nil, runErr
	}
	return &Result{Config: cfg, Targets: targets, Loads: loads, At: time.Now()}, nil
}

const title = "QoS request"

// requestCustomOffset is where the custom data starts in a request; the
// echo baselines send the request back whole, so the timestamp is found there.
const requestCustomOffset = 3 + len(title)

func startCaddy() (echoAddr, qosAddr, gg1Addr, ggAddr string, err error) {
	err = benchutil.StartCaddyOnFreePorts(func() string {
		echoAddr, qosAddr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
		gg1Addr, ggAddr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
		return fmt.Sprintf(`{
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
`, echoAddr, qosAddr, gg1Addr, ggAddr)
	})
	return echoAddr, qosAddr, gg1Addr, ggAddr, err
}

type target struct {
	name       string
	label      string
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

// Print writes the result as a table, or as JSON.
func (r *Result) Print(w io.Writer, asJSON bool) {
	targets, c := r.Targets, r.Config
	var sums []summary
	for _, t := range targets {
		s := summarize(t)
		s.VsBare, s.VsEcho, s.VsL4QoS = ratios(t, targets[0]), ratios(t, targets[1]), ratios(t, targets[2])
		sums = append(sums, s)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{
			"clients": c.Clients, "inflight": c.Inflight, "duration": c.Duration.String(), "rounds": c.Rounds,
			"load_average_1min": r.Loads, "cpus": runtime.NumCPU(), "targets": sums,
		})
		return
	}
	fmt.Fprintf(w, "%s: %d client sockets × %d requests in flight, %d rounds × %v per target\n",
		r.At.UTC().Format(time.RFC3339), c.Clients, c.Inflight, c.Rounds, c.Duration)
	fmt.Fprintf(w, "load average (1 min) before the rounds and after each: %s (%d CPUs)\n", strings.Join(r.Loads, ", "), runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tRESPONSES/S\tRTT P50\tRTT P99\tLOST\tVS BARE: MEDIAN (RANGE)\tVS CADDY-L4 ECHO\tVS CADDY-L4 QOS")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0fµs\t%.0fµs\t%d\t%s\t%s\t%s\n", s.Target, s.PerSecond, s.P50us, s.P99us, s.Lost,
			benchutil.FormatSpread(s.VsBare), benchutil.FormatSpread(s.VsEcho), benchutil.FormatSpread(s.VsL4QoS))
	}
	tw.Flush()
}

// Workload returns the result for the benchmark page: every target's
// responses per second, round by round, and the gamegate paths over the
// bare loop (goal 1.0×) and over caddy-l4's own echo.
func (r *Result) Workload(id, title, about string) *benchutil.Workload {
	w := &benchutil.Workload{
		ID: id, Title: title, About: about, Unit: "responses/s", Loads: r.Loads,
		Command: fmt.Sprintf("go run ./bench/qosload -clients %d -inflight %d -rounds %d -duration %v",
			r.Config.Clients, r.Config.Inflight, r.Config.Rounds, r.Config.Duration),
	}
	for _, t := range r.Targets {
		s := summarize(t)
		bt := &benchutil.Target{Name: t.name, Label: t.label, P50: s.P50us, P99: s.P99us, Extra: fmt.Sprintf("%d lost", s.Lost)}
		for _, res := range t.results {
			bt.Rates = append(bt.Rates, res.rate())
		}
		w.Targets = append(w.Targets, bt)
	}
	if gg, bare := w.Target("gg-qos"), w.Target("bare"); gg != nil && bare != nil && bare.P50 > 0 && r.Config.Inflight == 1 {
		w.Notes = append(w.Notes, fmt.Sprintf("Round-trip p50 over every round: the gamegate app's (default readers) %.0f µs, "+
			"the bare loop's %.0f µs (%.2f×); p99 %.0f µs and %.0f µs.", gg.P50, bare.P50, gg.P50/bare.P50, gg.P99, bare.P99))
	} else if gg != nil && bare != nil && bare.P99 > 0 {
		verdict := "met"
		if gg.P99 > bare.P99 {
			verdict = "**not met**"
		}
		w.Notes = append(w.Notes, fmt.Sprintf("Round-trip p99 over every round: the gamegate app's (default readers) %.0f µs, "+
			"the bare loop's %.0f µs (%.2f×; goal: no worse, %s); p50 %.0f µs and %.0f µs.",
			gg.P99, bare.P99, gg.P99/bare.P99, verdict, gg.P50, bare.P50))
	}
	for _, name := range []string{"gg-qos", "gg-qos-1", "l4-qos", "echo"} {
		if w.Target(name) != nil {
			goal := 0.0
			if name == "gg-qos" {
				goal = 1
				if r.Config.Inflight == 1 && r.Config.Clients == 1 {
					goal = 0.95
				}
			}
			w.Comparisons = append(w.Comparisons, benchutil.Comparison{Target: name, Baseline: "bare", Goal: goal})
		}
	}
	return w
}
