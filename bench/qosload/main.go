// Command qosload measures QoS echo throughput and round-trip latency
// through gamegate's UDP server and the caddy-l4 path against a bare Go
// echo loop, caddy-l4's own echo and a C server (recvmmsg/sendmmsg
// batches; built with cc where there is one), in the same rounds (see package
// bench/internal/qosload). Run it with
//
//	go run ./bench/qosload
//
// (see -h for the knobs). Everything listens on loopback. bench/run runs
// it with the other workloads and writes BENCHMARKS.md. The clients run in
// a process of their own: this program, started again.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/bench/internal/cserver"
	"github.com/gamegate/gamegate/bench/internal/qosload"
)

func main() {
	benchutil.Child()
	var c qosload.Config
	flag.IntVar(&c.Clients, "clients", 8, "client sockets per target")
	flag.IntVar(&c.Inflight, "inflight", 16, "requests in flight per client socket (closed loop)")
	flag.BoolVar(&c.SameProcess, "same-process", false, "run the clients in this process, as goroutines (closed loop; for one request in flight)")
	flag.IntVar(&c.Rate, "rate", 0, "requests per second from all client sockets together, whatever the answers do (open loop; 0: closed loop)")
	flag.DurationVar(&c.Duration, "duration", time.Second, "measuring time per target per round")
	flag.IntVar(&c.Rounds, "rounds", 5, "rounds over all targets")
	flag.DurationVar(&c.Pause, "pause", 2*time.Second, "idle time between rounds (the machine is shared)")
	flag.DurationVar(&c.Warmup, "warmup", 500*time.Millisecond, "load on every target before the rounds")
	jsonOut := flag.Bool("json", false, "print JSON")
	flag.StringVar(&c.Only, "only", "", "measure only this target, beside bare, echo and l4-qos (for profiling)")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	flag.StringVar(&c.Trace, "trace", "", "write an execution trace of the measured rounds to this file (scheduling and network waits: go tool trace)")
	flag.Parse()
	bin, note, cleanup, err := cserver.BuildTemp()
	if err != nil {
		benchutil.Fatal(err)
	}
	defer cleanup()
	if note != "" {
		fmt.Fprintln(os.Stderr, "qosload:", note)
	}
	c.CServer = bin
	r, err := qosload.Run(c)
	if err != nil {
		benchutil.Fatal(err)
	}
	r.Print(os.Stdout, *jsonOut)
}
