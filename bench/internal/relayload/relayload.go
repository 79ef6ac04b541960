// Package relayload measures messages forwarded between two loopback
// clients per second, their round-trip time and the messages lost, through:
//
//   - direct: no forwarder at all (the clients' own cost, for reference);
//   - bare: a plain Go UDP forwarder (one goroutine, ReadFrom/WriteTo);
//   - proxy: caddy-l4's own UDP proxy route;
//   - l4-relay: gamegate's relay as a caddy-l4 handler;
//   - gg-relay-1: the relay on gamegate's own UDP server, one reader
//     (recvmmsg/sendmmsg batches of 32);
//   - gg-relay: the same with the default readers (one per CPU, each on
//     its own SO_REUSEPORT socket);
//
// and, where they can be run, the TURN relays people deploy, each in a
// process of its own (see turn.go):
//
//   - coturn-2, pion-2: coturn and pion/turn with both clients allocated
//     (ChannelData after ChannelBind): every message passes two
//     allocations inside the server, the game topology;
//   - coturn-1, pion-1: one client allocated, the other a plain UDP socket:
//     one hop, like gamegate's relay between two bound allocations.
//
// The relay targets forward RELAY messages between bound, connected
// allocations, unchanged; the forwarders carry datagrams of the same size.
// Client A keeps a window of messages in flight to B, which sends each one
// straight back, so every round trip is two forwarded messages. The
// clients run in a process of their own (this program started again, with
// A's and B's sockets; bench/turn's load generator for the TURN servers),
// so that the servers' process measures its own CPU time alone. Targets
// are measured in rounds, in alternating order; each round's throughput is
// divided by the bare forwarder's and caddy-l4 proxy's of the same round,
// and the median and range of those ratios are reported with the machine's
// load average. The command is bench/relayload; bench/run runs it too.
package relayload

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/handlers/relay"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

const secret = "relayload-secret-0123456789abcdef"

type target struct {
	name, label string
	to, bTo     string // where A sends, and where B answers (empty: the sender)
	relay       bool   // forwards RELAY messages between bound allocations
	msg, reply  []byte
	res         []result
	// cpu reads the CPU time of the server's process: this one's if nil.
	cpu func() (time.Duration, error)
	// load, if set, returns the command of the target's load generator
	// (bench/turn's), measuring for d; otherwise this program's clients
	// run.
	load func(d time.Duration) *exec.Cmd
}

// Config is one run's load and rounds.
type Config struct {
	Window int    // messages in flight
	Size   int    // content bytes per message
	Only   string // measure only this target, beside direct, bare and proxy
	// TURN is bench/turn's program (BuildTURN); empty: the TURN relays are
	// left out.
	TURN string
	benchutil.Schedule
}

// Result is what a run measured.
type Result struct {
	Config  Config
	Targets []*target
	Loads   []string // load average before the rounds and after each
	At      time.Time
	Notes   []string // what was left out, and how the TURN relays ran
}

// Run starts the forwarders in this process, measures them and stops them.
func Run(cfg Config) (*Result, error) {
	// B listens on a fixed port so that the proxy route can name it.
	bConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer bConn.Close()
	aConn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer aConn.Close()
	for _, c := range []*net.UDPConn{aConn, bConn} {
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	var proxyAddr, l4Addr, gg1Addr, ggAddr string
	if err := benchutil.StartCaddyOnFreePorts(func() string {
		proxyAddr, l4Addr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
		gg1Addr, ggAddr = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
		return fmt.Sprintf(`{
	layer4 {
		udp/%[1]s {
			route {
				relay {
					secrets %[5]s
					name l4
					idle_timeout 10m
				}
			}
		}
		udp/%[2]s {
			route {
				proxy udp/%[6]s
			}
		}
	}
	gamegate {
		udp %[3]s {
			readers 1
			relay {
				secrets %[5]s
				name gg1
				idle_timeout 10m
			}
		}
		udp %[4]s {
			relay {
				secrets %[5]s
				name gg
				idle_timeout 10m
			}
		}
	}
}
`, l4Addr, proxyAddr, gg1Addr, ggAddr, secret, bConn.LocalAddr())
	}); err != nil {
		return nil, err
	}
	defer caddy.Stop() //nolint:errcheck
	bare, err := benchutil.ListenForwarder(aConn.LocalAddr().(*net.UDPAddr).AddrPort(), bConn.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		return nil, err
	}
	defer bare.Close()

	raw := make([]byte, wirerelay.HeaderLen+16+16+2+cfg.Size) // the size of a RELAY with Size content bytes
	targets := []*target{
		{name: "direct", label: "direct, no forwarder", to: bConn.LocalAddr().String(), bTo: aConn.LocalAddr().String(), msg: raw, reply: raw},
		{name: "bare", label: "bare Go forwarder", to: bare.LocalAddr().String(), msg: raw, reply: raw},
		{name: "proxy", label: "caddy-l4 `proxy`", to: proxyAddr, msg: raw, reply: raw},
		{name: "l4-relay", label: "layer4 `relay` route", to: l4Addr, relay: true},
		{name: "gg-relay-1", label: "gamegate app `relay`, 1 reader", to: gg1Addr, relay: true},
		{name: "gg-relay", label: "gamegate app `relay`, default readers", to: ggAddr, relay: true},
	}
	for _, t := range targets {
		if t.relay {
			aID, bID, err := bindPair(aConn, bConn, t.to)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			t.msg, _ = (&wirerelay.Relay{From: aID, To: bID, Content: make([]byte, cfg.Size)}).AppendTo(nil)
			t.reply, _ = (&wirerelay.Relay{From: bID, To: aID, Content: make([]byte, cfg.Size)}).AppendTo(nil)
		}
	}
	turns, notes, stop, err := startTURN(cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	targets = append(targets, turns...)
	if cfg.Only != "" {
		targets = slices.DeleteFunc(targets, func(t *target) bool {
			return t.name != cfg.Only && t.name != "direct" && t.name != "bare" && t.name != "proxy"
		})
	}
	// Each run has its own number, so that no answer of one counts in
	// another.
	loads, err := benchutil.Measure(cfg.Schedule, targets, func(t *target) string { return t.name },
		func(i int, t *target) error {
			_, err := runLoad(aConn, bConn, t, uint32(i), cfg.Window, max(cfg.Warmup, 100*time.Millisecond))
			return err
		},
		func(r, i int, t *target) error {
			res, err := runLoad(aConn, bConn, t, uint32(len(targets)*(r+1)+i), cfg.Window, cfg.Duration)
			t.res = append(t.res, res)
			return err
		})
	if err != nil {
		return nil, err
	}
	return &Result{Config: cfg, Targets: targets, Loads: loads, At: time.Now(), Notes: notes}, nil
}

// Print writes the result as a table.
func (r *Result) Print(w io.Writer) {
	targets := r.Targets
	byName := map[string]*target{}
	for _, t := range targets {
		byName[t.name] = t
	}
	fmt.Fprintf(w, "%s: one client pair, %d messages in flight, %d-byte datagrams, %d rounds × %v per target\n",
		r.At.UTC().Format(time.RFC3339), r.Config.Window, len(targets[0].msg), r.Config.Rounds, r.Config.Duration)
	fmt.Fprintf(w, "load average (1 min) before the rounds and after each: %s (%d CPUs)\n", strings.Join(r.Loads, ", "), runtime.NumCPU())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tFORWARDED/S\tRTT P50\tRTT P99\tLOST/SENT\tVS BARE: MEDIAN (RANGE)\tVS CADDY-L4 PROXY: MEDIAN (RANGE)\tCPU/MESSAGE: MEDIAN (RANGE)")
	for _, t := range targets {
		s := summarize(t.res)
		fmt.Fprintf(tw, "%s\t%.0f\t%.0fµs\t%.0fµs\t%d/%d\t%s\t%s\t%s\n", t.name, s.forwarded, s.p50, s.p99, s.lost, s.sent,
			ratios(t, byName["bare"]), ratios(t, byName["proxy"]), cpuPerMessage(t))
	}
	tw.Flush()
	fmt.Fprintln(w, "CPU/MESSAGE: the server's process's CPU time (user and system) per message forwarded; it hardly depends on the machine's load.")
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
}

// cpuPerMessage formats the median and range of t's CPU time per message
// forwarded, or "-" for the direct target.
func cpuPerMessage(t *target) string {
	if t.name == "direct" {
		return "-"
	}
	m, lo, hi := benchutil.Spread(serverCPU(t))
	return fmt.Sprintf("%.2fµs (%.2f–%.2f)", m, lo, hi)
}

// Workload returns the result for the benchmark page: messages forwarded
// per second, round by round, and the gamegate paths over the bare
// forwarder and caddy-l4's proxy (goal 1.0×), over coturn and pion/turn in
// the game topology (goal 1.0×), and hop for hop over coturn's one hop
// (goal 1.0× in messages/s and in CPU time per message).
func (r *Result) Workload(id, title, about string) *benchutil.Workload {
	w := &benchutil.Workload{
		ID: id, Title: title, About: about, Unit: "forwarded/s", Loads: r.Loads,
		Command: fmt.Sprintf("go run ./bench/relayload -window %d -rounds %d -duration %v", r.Config.Window, r.Config.Rounds, r.Config.Duration),
		Notes: append([]string{"CPU/message: the server's process's CPU time (user and system) per message forwarded, " +
			"while measuring; the clients run in a process of their own. It depends far less on the machine's load " +
			"than throughput does."}, r.Notes...),
	}
	for _, t := range r.Targets {
		s := summarize(t.res)
		bt := &benchutil.Target{Name: t.name, Label: t.label, P50: s.p50, P99: s.p99,
			Extra: fmt.Sprintf("%d/%d lost, CPU/message %s", s.lost, s.sent, cpuPerMessage(t))}
		for _, res := range t.res {
			bt.Rates = append(bt.Rates, res.rate())
		}
		if t.name != "direct" {
			bt.CPUs = serverCPU(t)
		}
		w.Targets = append(w.Targets, bt)
	}
	for _, c := range []benchutil.Comparison{
		{Target: "gg-relay", Baseline: "bare", Goal: 1}, {Target: "gg-relay", Baseline: "proxy", Goal: 1},
		{Target: "gg-relay", Baseline: "coturn-2", Goal: 1}, {Target: "gg-relay", Baseline: "pion-2", Goal: 1},
		{Target: "gg-relay", Baseline: "coturn-1", Goal: 1}, {Target: "gg-relay", Baseline: "coturn-1", Goal: 1, Metric: benchutil.CPU},
		{Target: "gg-relay", Baseline: "pion-1"}, {Target: "gg-relay", Baseline: "pion-1", Metric: benchutil.CPU},
		{Target: "gg-relay-1", Baseline: "bare"}, {Target: "l4-relay", Baseline: "bare"}, {Target: "proxy", Baseline: "bare"},
	} {
		if w.Target(c.Target) != nil && w.Target(c.Baseline) != nil {
			w.Comparisons = append(w.Comparisons, c)
		}
	}
	return w
}

// ratios formats the median and range of t's throughput over base's, round
// by round.
func ratios(t, base *target) string {
	if base == nil {
		return "-"
	}
	var xs []float64
	for i := range t.res {
		xs = append(xs, t.res[i].rate()/base.res[i].rate())
	}
	return benchutil.FormatSpread(xs)
}

// bindPair binds A and B to the relay (B as the host) and connects A to B.
func bindPair(aConn, bConn *net.UDPConn, relayAddr string) (wirerelay.AllocationID, wirerelay.AllocationID, error) {
	var ids [2]wirerelay.AllocationID
	sealer, err := relay.NewSealer([]byte(secret))
	if err != nil {
		return ids[0], ids[1], err
	}
	ra, err := net.ResolveUDPAddr("udp", relayAddr)
	if err != nil {
		return ids[0], ids[1], err
	}
	var datas [2][]byte
	for i, c := range []*net.UDPConn{aConn, bConn} {
		alloc, _ := relay.NewAllocation(1, "bench", time.Now().Add(time.Hour))
		data, _ := sealer.Seal(alloc)
		ids[i], datas[i] = alloc.ID, data
		m := wirerelay.Bind{ConnectionData: data}
		if err := m.Sign(alloc.Key[:], wirerelay.Options{Padded: true}); err != nil {
			return ids[0], ids[1], err
		}
		b, _ := m.AppendShipped(nil)
		if err := expect(c, ra, b, wirerelay.TypeBindReceived); err != nil {
			return ids[0], ids[1], err
		}
	}
	req, _ := (&wirerelay.ConnectRequest{AllocationID: ids[0], ToConnectionData: datas[1]}).AppendShipped(nil)
	return ids[0], ids[1], expect(aConn, ra, req, wirerelay.TypeAccepted)
}

func expect(c *net.UDPConn, to *net.UDPAddr, msg []byte, want wirerelay.Type) error {
	buf := make([]byte, 2048)
	for range 20 {
		_, _ = c.WriteToUDP(msg, to)
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := c.ReadFromUDP(buf)
		if err == nil {
			if t, _ := wirerelay.PeekHeader(buf[:n]); t == want {
				return nil
			}
		}
	}
	return fmt.Errorf("no %v from the relay", want)
}

// result is one measurement: what the load generator found (bench/turn's
// speaks the same JSON: keep the two alike) and the server's CPU time.
type result struct {
	RoundTrips int             `json:"round_trips"` // answered while sending
	Sent       int             `json:"sent"`
	Lost       int             `json:"lost"` // sent and never answered, late answers counted
	Elapsed    time.Duration   `json:"elapsed"`
	RTTs       []time.Duration `json:"rtts"`
	cpu        time.Duration   // the server's process, while measuring
}

// rate is messages forwarded per second (two per round trip).
func (r result) rate() float64 { return 2 * float64(r.RoundTrips) / r.Elapsed.Seconds() }

// serverCPU returns t's server's CPU time per forwarded message, in
// microseconds, round by round (two messages per round trip).
func serverCPU(t *target) []float64 {
	var xs []float64
	for _, r := range t.res {
		xs = append(xs, float64(r.cpu)/float64(2*max(1, r.RoundTrips))/1000)
	}
	return xs
}

type summary struct {
	forwarded, p50, p99 float64
	sent, lost          int
}

func summarize(rs []result) summary {
	var s summary
	var rtts []time.Duration
	var el time.Duration
	n := 0
	for _, r := range rs {
		n += r.RoundTrips
		s.sent += r.Sent
		s.lost += r.Lost
		el += r.Elapsed
		rtts = append(rtts, r.RTTs...)
	}
	rtts = benchutil.Sorted(rtts)
	s.forwarded = 2 * float64(n) / el.Seconds()
	s.p50, s.p99 = benchutil.Percentile(rtts, 0.5), benchutil.Percentile(rtts, 0.99)
	return s
}

// measure runs A's closed loop of j for j.Duration, and calls stopped
// once A stops sending. B answers each message with j.Reply carrying A's
// sequence and timestamp (raw forwarders: the message as is), to j.BTo if
// set, else to where the message came from. Each message carries the
// run's number and its sequence: lost is what A sent minus what came back
// to it, late answers included, and answers to an earlier run are ignored.
func measure(aConn, bConn *net.UDPConn, j job, stopped func()) result {
	run, window, d := j.Run, j.Window, j.Duration
	dst, _ := net.ResolveUDPAddr("udp", j.To)
	var bDst *net.UDPAddr
	if j.BTo != "" {
		bDst, _ = net.ResolveUDPAddr("udp", j.BTo)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The payload's first 16 bytes (after the RELAY header) carry the run,
	// a sequence and a send time.
	const off = wirerelay.HeaderLen + 16 + 16 + 2
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		buf := make([]byte, 2048)
		out := append([]byte(nil), j.Reply...)
		for ctx.Err() == nil {
			_ = bConn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			n, from, err := bConn.ReadFromUDP(buf)
			if err != nil || n < off+16 {
				continue
			}
			if j.Relay {
				copy(out[off:off+16], buf[off:off+16])
			} else {
				out = append(out[:0], buf[:n]...) // raw forwarders: echo as is
			}
			to := from
			if bDst != nil {
				to = bDst
			}
			_, _ = bConn.WriteToUDP(out, to)
		}
	}()
	start := time.Now()
	var res result
	out := append([]byte(nil), j.Msg...)
	binary.BigEndian.PutUint32(out[off:], run)
	seq := uint32(0)
	send := func() {
		binary.BigEndian.PutUint32(out[off+4:], seq)
		binary.BigEndian.PutUint64(out[off+8:], uint64(time.Since(start)))
		if _, err := aConn.WriteToUDP(out, dst); err == nil {
			res.Sent++
		}
		seq++
	}
	for range window {
		send()
	}
	buf := make([]byte, 2048)
	received := 0
	// recv reads one answer of this run; false on a timeout.
	recv := func(timeout time.Duration) (time.Duration, bool) {
		_ = aConn.SetReadDeadline(time.Now().Add(timeout))
		for {
			n, _, err := aConn.ReadFromUDP(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					return 0, false
				}
				continue
			}
			if n < off+16 || binary.BigEndian.Uint32(buf[off:]) != run {
				continue
			}
			received++
			return time.Since(start) - time.Duration(binary.BigEndian.Uint64(buf[off+8:])), true
		}
	}
	stop := start.Add(d)
	for time.Now().Before(stop) {
		rtt, ok := recv(200 * time.Millisecond)
		if !ok {
			for range window { // the window is lost: refill it
				send()
			}
			continue
		}
		res.RTTs = append(res.RTTs, rtt)
		res.RoundTrips++
		send()
	}
	res.Elapsed = time.Since(start)
	stopped()
	// Late answers count as received, not as forwarded in time.
	for received < res.Sent {
		if _, ok := recv(200 * time.Millisecond); !ok {
			break
		}
	}
	res.Lost = res.Sent - received
	cancel()
	<-bDone
	return res
}

// job is one measurement of the clients' process: A's and B's sockets are
// its files 3 and 4.
type job struct {
	To, BTo    string
	Relay      bool
	Msg, Reply []byte
	Run        uint32
	Window     int
	Duration   time.Duration
}

func init() { benchutil.RegisterChild("relayload", clients) }

// runLoad measures t for d with its load generator: the clients' process
// (this program started again, with A's and B's sockets), or the target's
// own. The server's CPU time is read over the measuring alone.
func runLoad(aConn, bConn *net.UDPConn, t *target, run uint32, window int, d time.Duration) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cmd *exec.Cmd
	if t.load != nil {
		cmd = t.load(d)
	} else {
		c, err := benchutil.ChildCommand(ctx, "relayload")
		if err != nil {
			return result{}, err
		}
		j, err := json.Marshal(job{To: t.to, BTo: t.bTo, Relay: t.relay, Msg: t.msg, Reply: t.reply, Run: run, Window: window, Duration: d})
		if err != nil {
			return result{}, err
		}
		fa, err := aConn.File()
		if err != nil {
			return result{}, err
		}
		defer fa.Close()
		fb, err := bConn.File()
		if err != nil {
			return result{}, err
		}
		defer fb.Close()
		c.Args = append(c.Args, string(j))
		c.ExtraFiles = []*os.File{fa, fb}
		cmd = c
	}
	cpu := t.cpu
	if cpu == nil {
		cpu = benchutil.SelfCPU
	}
	var res result
	used, err := benchutil.RunStepped(cmd, d+time.Minute, cpu, &res)
	res.cpu = used
	return res, err
}

// clients is the clients' process: one measurement of the job in its
// first argument, on the sockets it was given.
func clients() error {
	if len(os.Args) < 2 {
		return errors.New("no job")
	}
	var j job
	if err := json.Unmarshal([]byte(os.Args[1]), &j); err != nil {
		return err
	}
	var conns [2]*net.UDPConn
	for i := range conns {
		f := os.NewFile(uintptr(3+i), "client")
		c, err := net.FilePacketConn(f)
		f.Close()
		if err != nil {
			return err
		}
		uc, ok := c.(*net.UDPConn)
		if !ok {
			return fmt.Errorf("file %d is not a UDP socket", 3+i)
		}
		conns[i] = uc
	}
	s := benchutil.NewStepper()
	if err := s.Ready(); err != nil {
		return err
	}
	var stopErr error
	res := measure(conns[0], conns[1], j, func() { stopErr = s.Stopped() })
	if stopErr != nil {
		return stopErr
	}
	return s.Result(res)
}
