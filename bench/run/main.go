// Command run measures every gamegate workload against its baseline, in
// the same run and in interleaved rounds, and writes BENCHMARKS.md at the
// repository's root with a chart per workload (bench/charts/*.svg). Run it
// from anywhere in the repository:
//
//	go run ./bench/run            # everything, about 10 minutes on 2 CPUs
//	go run ./bench/run -quick     # one short round of each: checks, not figures
//	go run ./bench/run -only game-query -cpuprofile gq.prof
//
// See -h for the knobs. Everything listens on loopback; the load
// generators run in processes of their own (this program started again,
// bench/turn's), on the same CPUs as the servers, so every figure is
// reported beside a baseline measured in the same rounds.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gamegate/gamegate/bench/internal/a2sload"
	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/bench/internal/cserver"
	"github.com/gamegate/gamegate/bench/internal/httpload"
	"github.com/gamegate/gamegate/bench/internal/qosload"
	"github.com/gamegate/gamegate/bench/internal/relayload"
)

// Options are bench/run's flags.
type Options struct {
	Rounds     int
	Duration   time.Duration // UDP workloads, per target per round
	HTTP       time.Duration // HTTP workloads, per target per round
	Pause      time.Duration
	Conns      int
	Servers    int
	Only       []string
	Out        string // the directory BENCHMARKS.md is written to
	CPUProfile string
	Quick      bool
	Log        io.Writer
}

// Workload IDs, in the page's order.
var workloadIDs = []string{"qos", "qos-rate", "qos-one", "relay", "a2s", "dgram", httpload.Discovery, httpload.GameQuery, httpload.ServerList}

func main() {
	benchutil.Child()
	o := Options{Log: os.Stderr}
	flag.IntVar(&o.Rounds, "rounds", 5, "interleaved rounds of each workload")
	flag.DurationVar(&o.Duration, "duration", 2*time.Second, "measuring time per target per round, UDP workloads")
	flag.DurationVar(&o.HTTP, "http-duration", 3*time.Second, "measuring time per target per round, HTTP workloads")
	flag.DurationVar(&o.Pause, "pause", 2*time.Second, "idle time between rounds")
	flag.IntVar(&o.Conns, "conns", 32, "HTTP connections kept busy")
	flag.IntVar(&o.Servers, "servers", 50, "game servers registered with the master for server_list")
	only := flag.String("only", "", "comma-separated workloads to run (default all): "+strings.Join(workloadIDs, ", "))
	flag.StringVar(&o.Out, "out", "", "directory to write BENCHMARKS.md and charts/ to (default: the repository's root, charts in bench/charts)")
	flag.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured rounds (with -only naming one workload)")
	flag.BoolVar(&o.Quick, "quick", false, "one short round of each workload: checks that everything runs, measures nothing worth keeping")
	flag.Parse()
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	if o.Out == "" {
		root, err := benchutil.RepoRoot()
		if err != nil {
			benchutil.Fatal(fmt.Errorf("%w, or give -out", err))
		}
		o.Out = root
	}
	start := time.Now()
	path, err := Run(o)
	if err != nil {
		benchutil.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s in %v\n", path, time.Since(start).Round(time.Second))
}

// Run runs the workloads o names and writes the page and the charts,
// returning the page's path.
func Run(o Options) (string, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Quick {
		o.Rounds, o.Duration, o.HTTP, o.Pause = 1, 100*time.Millisecond, 100*time.Millisecond, 0
		o.Conns, o.Servers = min(max(o.Conns, 1), 8), min(max(o.Servers, 1), 5)
	}
	if o.Rounds < 1 || o.Duration <= 0 || o.HTTP <= 0 || o.Conns < 1 || o.Servers < 1 {
		return "", fmt.Errorf("rounds, durations, conns and servers must be positive")
	}
	for _, id := range o.Only {
		if !slices.Contains(workloadIDs, id) {
			return "", fmt.Errorf("no workload %q (there are %s)", id, strings.Join(workloadIDs, ", "))
		}
	}
	if o.CPUProfile != "" && len(o.Only) != 1 {
		return "", fmt.Errorf("-cpuprofile profiles one workload: name it with -only")
	}
	want := func(id string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, id) }
	warmup := 500 * time.Millisecond
	if o.Quick {
		warmup = 0
	}
	udpSchedule := benchutil.Schedule{Duration: o.Duration, Rounds: o.Rounds, Pause: o.Pause, Warmup: warmup, CPUProfile: o.CPUProfile}
	page := Page{Machine: machine(), Quick: o.Quick, Started: time.Now(), LoadBefore: loadAverages()}
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.Log, "bench: %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	// The C server, the UDP workloads' limit, is built once for all.
	var cServer string
	if slices.ContainsFunc([]string{"qos", "qos-rate", "qos-one", "a2s"}, want) {
		bin, note, cleanup, err := cserver.BuildTemp()
		if err != nil {
			return "", err
		}
		defer cleanup()
		if note != "" {
			logf("%s", note)
			page.Notes = append(page.Notes, "The C server is not measured: "+note+".")
		}
		cServer = bin
	}
	udp := func(id string, run func() (*benchutil.Workload, error)) error {
		if !want(id) {
			return nil
		}
		logf("%s", id)
		w, err := run()
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		page.Workloads = append(page.Workloads, w)
		return nil
	}
	var bareRate float64 // the bare loop's responses/s in the qos workload
	// qos measures the QoS echo under cfg's load, on the run's schedule.
	qos := func(cfg qosload.Config, id, title, about string) (*qosload.Result, *benchutil.Workload, error) {
		cfg.Duration, cfg.Rounds, cfg.Pause, cfg.Warmup, cfg.CPUProfile = o.Duration, o.Rounds, o.Pause, warmup, o.CPUProfile
		cfg.CServer = cServer
		r, err := qosload.Run(cfg)
		if err != nil {
			return nil, nil, err
		}
		return r, r.Workload(id, title, about), nil
	}
	steps := []struct {
		id  string
		run func() (*benchutil.Workload, error)
	}{
		{"qos", func() (*benchutil.Workload, error) {
			r, w, err := qos(qosload.Config{Clients: 8, Inflight: 16}, "qos", "QoS echo under load", qosAbout)
			if err == nil {
				bareRate = r.BareRate()
			}
			return w, err
		}},
		{"qos-rate", func() (*benchutil.Workload, error) {
			if bareRate == 0 {
				// Alone: the bare loop's throughput under the qos
				// workload's load, first.
				r, err := qosload.Run(qosload.Config{Clients: 8, Inflight: 16, Duration: o.Duration, Rounds: 1,
					Warmup: warmup, Only: "bare"})
				if err != nil {
					return nil, err
				}
				bareRate = r.BareRate()
			}
			rate := max(int(bareRate*qosRateShare), 1000)
			_, w, err := qos(qosload.Config{Clients: 8, Rate: rate}, "qos-rate", "QoS echo at a fixed rate", fmt.Sprintf(qosRateAbout, rate))
			return w, err
		}},
		{"qos-one", func() (*benchutil.Workload, error) {
			_, w, err := qos(qosload.Config{Clients: 1, Inflight: 1, SameProcess: true}, "qos-one", "QoS echo, one request in flight", qosOneAbout)
			return w, err
		}},
		{"relay", func() (*benchutil.Workload, error) {
			turn, err := buildTURN(logf)
			if err != nil {
				return nil, err
			}
			if turn != "" {
				defer os.RemoveAll(filepath.Dir(turn))
			}
			r, err := relayload.Run(relayload.Config{Window: 64, Size: 100, TURN: turn, Schedule: udpSchedule})
			if err != nil {
				return nil, err
			}
			return r.Workload("relay", "Relay forwarding", relayAbout), nil
		}},
		{"a2s", func() (*benchutil.Workload, error) {
			w, err := a2sload.Run(a2sload.Config{Clients: 8, Inflight: 8, CServer: cServer, Schedule: udpSchedule})
			if err != nil {
				return nil, err
			}
			w.ID, w.Title, w.About = "a2s", "A2S shield: cached A2S_INFO over UDP", a2sAbout
			return w, nil
		}},
		{"dgram", func() (*benchutil.Workload, error) {
			benchtime := "1s"
			if o.Quick {
				benchtime = "1000x"
			}
			w, err := dgramWorkload(o.Rounds, benchtime, o.Pause, o.Log)
			if err != nil {
				return nil, err
			}
			w.ID, w.Title, w.About = "dgram", "dgram's echo benchmark", dgramAbout
			return w, nil
		}},
	}
	for _, s := range steps {
		if err := udp(s.id, s.run); err != nil {
			return "", err
		}
	}
	var httpIDs []string
	for _, id := range []string{httpload.Discovery, httpload.GameQuery, httpload.ServerList} {
		if want(id) {
			httpIDs = append(httpIDs, id)
		}
	}
	if len(httpIDs) > 0 {
		logf("%s", strings.Join(httpIDs, ", "))
		httpSchedule := udpSchedule
		httpSchedule.Duration = o.HTTP
		ws, err := httpload.Run(httpload.Config{Conns: o.Conns, Servers: o.Servers, Workloads: httpIDs, Schedule: httpSchedule})
		if err != nil {
			return "", fmt.Errorf("http: %w", err)
		}
		for _, w := range ws {
			w.Title, w.About = httpText[w.ID][0], httpText[w.ID][1]
		}
		page.Workloads = append(page.Workloads, ws...)
	}
	page.Finished, page.LoadAfter = time.Now(), loadAverages()
	return page.Write(o.Out)
}

// buildTURN builds bench/turn (pion/turn's server and the TURN load
// generator, a module of its own) into a temporary directory. Where it
// cannot be built (no module proxy reachable and an empty module cache),
// the relay workload goes on without the TURN relays and says so.
func buildTURN(logf func(string, ...any)) (string, error) {
	root, err := benchutil.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "gamegate-turn")
	if err != nil {
		return "", err
	}
	bin, err := relayload.BuildTURN(root, dir)
	if err != nil {
		os.RemoveAll(dir)
		logf("the TURN relays are left out: %v", err)
		return "", nil
	}
	return bin, nil
}
