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
// Each target gets the same load: several client sockets, each keeping a
// fixed number of Unity-layout requests in flight (a closed loop), or, with
// a rate, sending at a fixed rate whatever the answers do (an open loop:
// latency at the same offered load for every target). Targets are measured
// in rounds, in alternating order; each round's throughput is divided by
// the bare loop's and caddy-l4's of the same round. Everything listens on
// loopback. The command is bench/qosload; bench/run runs it too.
//
// The clients run in a process of their own (this program, started again;
// see benchutil.Child), all their sockets on one thread that waits in epoll_wait, and
// at a fixed rate a second thread that sends. In one Go process with the
// servers, the clients would share the servers' scheduler: once every P is
// busy, a goroutine whose answer has arrived waits for the runtime's next
// network poll, up to 10 ms, and the latency measured would be the
// clients' own; and a goroutine or thread per client socket would leave
// the clients, not the servers, setting the pace. The servers' process
// runs nothing but the servers, so its CPU time per response is theirs
// alone. With one request in flight (SameProcess) the clients run in the
// servers' process instead: see Config.
package qosload

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/bench/internal/cserver"
)

// Config is one run's load and rounds.
type Config struct {
	Clients  int // client sockets per target
	Inflight int // requests in flight per client socket (closed loop)
	Rate     int // requests per second from all clients together (open loop); 0: closed loop
	// SameProcess runs the clients as goroutines of the servers' process
	// (closed loop only). With one request in flight no P stays busy, so
	// the client notices its answer at once; the client and the reader
	// hand the CPU to each other on one thread, and the round trip is the
	// paths' own cost, without the cross-CPU wakeups whose cost on a
	// virtual machine varies from round to round by a factor of two.
	SameProcess bool
	Duration    time.Duration // measuring time per target per round
	Rounds      int           // rounds over all targets
	Pause       time.Duration // idle time between rounds (the machine is shared)
	Warmup      time.Duration // load on every target before the rounds
	Only        string        // measure only this target, beside bare, echo and l4-qos ("bare": only it)
	CPUProfile  string        // write a CPU profile of the measured rounds here
	Trace       string        // write an execution trace of the measured rounds here
	// CServer is the C server's program (package cserver), measured with
	// one thread and with one per CPU; empty: left out.
	CServer string
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
	switch {
	case cfg.Rate < 0 || cfg.Rate > maxRate:
		return nil, fmt.Errorf("rate %d: want 0 (a closed loop) to %d requests/s", cfg.Rate, maxRate)
	case cfg.Rate > 0 && cfg.SameProcess:
		return nil, errors.New("the clients run in the servers' process in a closed loop only: no rate")
	case cfg.Clients < 1 || cfg.Rate == 0 && cfg.Inflight < 1:
		return nil, errors.New("want at least one client socket and, in a closed loop, one request in flight")
	}
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
	// Not beside clients in this process: every round trip to the C
	// server's process would be a wakeup across processes, which the
	// in-process targets do not pay.
	if cfg.CServer != "" && !cfg.SameProcess {
		for _, threads := range []int{1, runtime.NumCPU()} {
			c, err := cserver.Start(cfg.CServer, cserver.QoS, threads)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			t := &target{name: "c", label: fmt.Sprintf("C server (recvmmsg/sendmmsg), %d threads", threads), addr: c.Addr, echoOffset: 2, cpu: c.CPU}
			if threads == 1 {
				t.name, t.label = "c-1", "C server (recvmmsg/sendmmsg), 1 thread"
			}
			targets = append(targets, t)
		}
	}
	if cfg.Only == "bare" {
		targets = targets[:1]
	} else if cfg.Only != "" {
		targets = slices.DeleteFunc(targets, func(t *target) bool {
			return t.name != cfg.Only && t.name != "bare" && t.name != "echo" && t.name != "l4-qos"
		})
	}
	// Warm up every path once before measuring.
	if cfg.Warmup > 0 {
		for _, t := range targets {
			if _, err := runLoad(t, cfg, cfg.Warmup); err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
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
		cpu, err := t.cpuTime()
		if err != nil {
			runErr = fmt.Errorf("%s: %w", t.name, err)
			return
		}
		res, err := runLoad(t, cfg, cfg.Duration)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", t.name, err)
		}
		after, err := t.cpuTime()
		if err != nil {
			runErr = fmt.Errorf("%s: %w", t.name, err)
		}
		res.CPU = after - cpu
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
	// cpu reads the CPU time of the server's process: this one's if nil.
	cpu func() (time.Duration, error)
}

func (t *target) cpuTime() (time.Duration, error) {
	if t.cpu == nil {
		return benchutil.ProcessCPU(), nil
	}
	return t.cpu()
}

// loadResult is one measurement of one target, as the client process
// reports it (and the servers' CPU time, which this process adds).
type loadResult struct {
	Responses int             // answered while sending
	Lost      int             // sent and never answered (late answers are not lost)
	Elapsed   time.Duration   // sending time
	RTTs      []time.Duration // of the responses counted
	// Mean datagrams queued, over samples taken every millisecond: in the
	// target's socket receive queues (requests the server has not read)
	// and in the clients' (answers the clients have not read yet).
	QueuedServer, QueuedClients float64
	CPU                         time.Duration // the servers' process, while measuring
}

func (t *target) add(r loadResult) { t.results = append(t.results, r) }

// job is what the client process is asked to do.
type job struct {
	Addr       string
	EchoOffset int
	Clients    int
	Inflight   int
	Rate       int
	Duration   time.Duration
}

// maxRate is the highest rate the clients are asked for: far above what
// one sending thread manages, far below a zero interval between sends.
const maxRate = 10_000_000

func init() { benchutil.RegisterChild("qosload", benchutil.ServeChild(clients)) }

// runLoad measures t for d: it starts this program again as the clients
// (benchutil.RunChild) and reads their result.
func runLoad(t *target, cfg Config, d time.Duration) (loadResult, error) {
	if cfg.SameProcess {
		return sameProcess(t, cfg, d)
	}
	// The clients stop by themselves after d and at most a few idle
	// waits; a child that does not is killed rather than waited for.
	var res loadResult
	if err := benchutil.RunChild("qosload", d+time.Minute, job{Addr: t.addr, EchoOffset: t.echoOffset, Clients: cfg.Clients,
		Inflight: cfg.Inflight, Rate: cfg.Rate, Duration: d}, &res); err != nil {
		return loadResult{}, err
	}
	// Let the servers' per-client associations drain before the next target.
	time.Sleep(100 * time.Millisecond)
	return res, nil
}

// sameProcess measures t for d with the clients in this process (a closed
// loop of goroutines, as benchutil.ClosedLoop runs them).
func sameProcess(t *target, cfg Config, d time.Duration) (loadResult, error) {
	var mu sync.Mutex
	var res loadResult
	start := time.Now()
	elapsed, err := benchutil.ClosedLoop(t.addr, cfg.Clients, d, func(id int, c *benchutil.LoopConn) benchutil.Loop {
		rtts := make([]time.Duration, 0, 1<<16)
		req := make([]byte, 0, 64)
		seq := uint8(0)
		send := func() error {
			seq++
			req = appendRequest(req[:0], seq, id, time.Since(start))
			return c.Send(req)
		}
		return benchutil.Loop{
			Fill: func() error {
				for range cfg.Inflight {
					if err := send(); err != nil {
						return err
					}
				}
				return nil
			},
			Answer: func(b []byte) error {
				if at, ok := stampOf(b, t.echoOffset); ok {
					rtts = append(rtts, time.Since(start)-at)
				}
				return send()
			},
			Done: func() {
				mu.Lock()
				defer mu.Unlock()
				res.RTTs = append(res.RTTs, rtts...)
				res.Lost += c.Sent - c.Received
			},
		}
	})
	if err != nil {
		return loadResult{}, err
	}
	res.Elapsed, res.Responses = elapsed, len(res.RTTs)
	time.Sleep(100 * time.Millisecond) // as runLoad
	return res, nil
}

// appendRequest appends a Unity-layout QoS request to b whose custom data
// carries seq, the client's id and at, the time since the start.
func appendRequest(b []byte, seq uint8, id int, at time.Duration) []byte {
	b = append(b, 0x59, 0x00, byte(len(title)+1))
	b = append(b, title...)
	b = append(b, seq)
	b = binary.LittleEndian.AppendUint16(b, uint16(id))
	return binary.LittleEndian.AppendUint64(b, uint64(at))
}

// stampOf returns the time since the start a response's request was sent
// at, found echoOffset bytes into it, or false if it is too short.
func stampOf(b []byte, echoOffset int) (time.Duration, bool) {
	if len(b) < echoOffset+11 {
		return 0, false
	}
	return time.Duration(binary.LittleEndian.Uint64(b[echoOffset+3:])), true
}

type summary struct {
	Target    string  `json:"target"`
	PerSecond float64 `json:"responses_per_second"`
	P50us     float64 `json:"rtt_p50_us"`
	P99us     float64 `json:"rtt_p99_us"`
	Lost      int     `json:"lost"`
	// The servers' process's CPU time per response, in microseconds.
	CPUus float64 `json:"cpu_us_per_response"`
	// Mean datagrams waiting in the target's sockets and in the clients'.
	QueuedServer  float64 `json:"queued_at_server"`
	QueuedClients float64 `json:"queued_at_clients"`
	// Each round's throughput over the baseline's of the same round.
	VsBare  []float64 `json:"ratios_vs_bare"`
	VsEcho  []float64 `json:"ratios_vs_caddy_l4_echo"`
	VsL4QoS []float64 `json:"ratios_vs_caddy_l4_qos"`
}

func (r loadResult) rate() float64 { return float64(r.Responses) / r.Elapsed.Seconds() }

func (r loadResult) p99() float64 { return benchutil.Percentile(benchutil.Sorted(r.RTTs), 0.99) }

// ratios returns t's throughput over base's, round by round (none if base
// was not measured).
func ratios(t, base *target) []float64 {
	if base == nil {
		return nil
	}
	var xs []float64
	for i := range t.results {
		xs = append(xs, t.results[i].rate()/base.results[i].rate())
	}
	return xs
}

func summarize(t *target) summary {
	var responses, lost int
	var elapsed, cpu time.Duration
	var rtts []time.Duration
	var qs, qc float64
	for _, r := range t.results {
		responses += r.Responses
		lost += r.Lost
		elapsed += r.Elapsed
		cpu += r.CPU
		qs += r.QueuedServer / float64(len(t.results))
		qc += r.QueuedClients / float64(len(t.results))
		rtts = append(rtts, r.RTTs...)
	}
	rtts = benchutil.Sorted(rtts)
	return summary{
		Target:        t.name,
		PerSecond:     float64(responses) / elapsed.Seconds(),
		P50us:         benchutil.Percentile(rtts, 0.50),
		P99us:         benchutil.Percentile(rtts, 0.99),
		Lost:          lost,
		CPUus:         cpu.Seconds() * 1e6 / float64(max(responses, 1)),
		QueuedServer:  qs,
		QueuedClients: qc,
	}
}

// load describes the load of c.
func (c Config) load() string {
	if c.Rate > 0 {
		return fmt.Sprintf("%d client sockets sending %d requests/s in all", c.Clients, c.Rate)
	}
	return fmt.Sprintf("%d client sockets × %d requests in flight", c.Clients, c.Inflight)
}

// Print writes the result as a table, or as JSON.
func (r *Result) Print(w io.Writer, asJSON bool) {
	targets, c := r.Targets, r.Config
	var sums []summary
	byName := func(name string) *target {
		for _, t := range targets {
			if t.name == name {
				return t
			}
		}
		return nil
	}
	bare, echo, l4 := byName("bare"), byName("echo"), byName("l4-qos")
	for _, t := range targets {
		s := summarize(t)
		s.VsBare, s.VsEcho, s.VsL4QoS = ratios(t, bare), ratios(t, echo), ratios(t, l4)
		sums = append(sums, s)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{
			"clients": c.Clients, "inflight": c.Inflight, "rate": c.Rate, "duration": c.Duration.String(), "rounds": c.Rounds,
			"load_average_1min": r.Loads, "cpus": runtime.NumCPU(), "targets": sums,
		})
		return
	}
	fmt.Fprintf(w, "%s: %s, %d rounds × %v per target\n", r.At.UTC().Format(time.RFC3339), c.load(), c.Rounds, c.Duration)
	fmt.Fprintf(w, "load average (1 min) before the rounds and after each: %s (%d CPUs)\n", strings.Join(r.Loads, ", "), runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tRESPONSES/S\tRTT P50\tRTT P99\tLOST\tSERVER CPU/RESPONSE\tQUEUED AT SERVER/CLIENTS\tVS BARE: MEDIAN (RANGE)\tVS CADDY-L4 ECHO\tVS CADDY-L4 QOS")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0fµs\t%.0fµs\t%d\t%.2fµs\t%.1f/%.1f\t%s\t%s\t%s\n", s.Target, s.PerSecond, s.P50us, s.P99us, s.Lost,
			s.CPUus, s.QueuedServer, s.QueuedClients,
			benchutil.FormatSpread(s.VsBare), benchutil.FormatSpread(s.VsEcho), benchutil.FormatSpread(s.VsL4QoS))
	}
	tw.Flush()
}

// Workload returns the result for the benchmark page: every target's
// responses per second and p99, round by round, and the gamegate paths
// over the bare loop. In a closed loop they compare throughput (goal 1.0×
// for the app with its default readers, 0.95× with one request in flight);
// at a fixed rate, where throughput is the rate, they compare the bare
// loop's p99 over theirs (goal 1.0×: no worse).
func (r *Result) Workload(id, title, about string) *benchutil.Workload {
	c := r.Config
	command := fmt.Sprintf("go run ./bench/qosload -clients %d -inflight %d -rounds %d -duration %v", c.Clients, c.Inflight, c.Rounds, c.Duration)
	if c.SameProcess {
		command += " -same-process"
	}
	if c.Rate > 0 {
		command = fmt.Sprintf("go run ./bench/qosload -clients %d -rate %d -rounds %d -duration %v", c.Clients, c.Rate, c.Rounds, c.Duration)
	}
	w := &benchutil.Workload{ID: id, Title: title, About: about, Unit: "responses/s", Loads: r.Loads, Command: command}
	for _, t := range r.Targets {
		s := summarize(t)
		extra := fmt.Sprintf("%d lost; server CPU %.2f µs/response; queued at the server %.1f, at the clients %.1f",
			s.Lost, s.CPUus, s.QueuedServer, s.QueuedClients)
		if c.SameProcess {
			extra = fmt.Sprintf("%d lost; CPU of servers and clients %.2f µs/response", s.Lost, s.CPUus)
		}
		bt := &benchutil.Target{Name: t.name, Label: t.label, P50: s.P50us, P99: s.P99us, Extra: extra}
		for _, res := range t.results {
			bt.Rates = append(bt.Rates, res.rate())
			bt.P99s = append(bt.P99s, res.p99())
		}
		w.Targets = append(w.Targets, bt)
	}
	if c.SameProcess && c.CServer != "" {
		w.Notes = append(w.Notes, "The C server is left out here: the client runs in the servers' process, and each "+
			"round trip to the C server's would be a wakeup across processes, which the targets in this process do not pay "+
			"(measured, it came out at 0.2× to 1.0× the bare loop from run to run).")
	}
	gg, bare := w.Target("gg-qos"), w.Target("bare")
	if gg != nil && bare != nil && bare.P50 > 0 {
		w.Notes = append(w.Notes, fmt.Sprintf("Round-trip times over every round: the gamegate app's (default readers) p50 %.0f µs "+
			"and p99 %.0f µs; the bare loop's %.0f µs and %.0f µs.", gg.P50, gg.P99, bare.P50, bare.P99))
	}
	for _, name := range []string{"gg-qos", "gg-qos-1", "l4-qos", "echo"} {
		if w.Target(name) == nil {
			continue
		}
		cmp := benchutil.Comparison{Target: name, Baseline: "bare"}
		switch {
		case c.Rate > 0:
			cmp.Metric = benchutil.P99
		case name == "gg-qos" && c.Inflight == 1 && c.Clients == 1:
			cmp.Goal = 0.95
		}
		if name == "gg-qos" && cmp.Goal == 0 {
			cmp.Goal = 1
		}
		w.Comparisons = append(w.Comparisons, cmp)
	}
	// The C server with the same number of threads as the app's readers
	// (its default is one per CPU): under load, the app aims at 0.9× it.
	for _, cmp := range []benchutil.Comparison{{Target: "gg-qos", Baseline: "c"}, {Target: "gg-qos-1", Baseline: "c-1"},
		{Target: "c", Baseline: "bare"}, {Target: "c-1", Baseline: "bare"}} {
		if w.Target(cmp.Target) == nil || w.Target(cmp.Baseline) == nil {
			continue
		}
		switch {
		case c.Rate > 0:
			cmp.Metric = benchutil.P99
		case c.Inflight > 1 && cmp.Baseline != "bare":
			cmp.Goal = 0.9
		}
		w.Comparisons = append(w.Comparisons, cmp)
	}
	return w
}

// BareRate returns the bare loop's median responses per second over the
// rounds, or zero if it was not measured.
func (r *Result) BareRate() float64 {
	for _, t := range r.Targets {
		if t.name == "bare" {
			var xs []float64
			for _, res := range t.results {
				xs = append(xs, res.rate())
			}
			m, _, _ := benchutil.Spread(xs)
			return m
		}
	}
	return 0
}
