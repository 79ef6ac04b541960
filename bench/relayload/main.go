// Command relayload measures messages forwarded between two loopback
// clients per second through gamegate's relay (the gamegate app and a
// caddy-l4 route) against a bare Go forwarder and caddy-l4's UDP proxy, in
// the same rounds (see package bench/internal/relayload). Run it with
//
//	go run ./bench/relayload [-window 64] [-rounds 5]
//
// bench/run runs it with the other workloads and writes BENCHMARKS.md.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/bench/internal/relayload"
)

func main() {
	var c relayload.Config
	flag.IntVar(&c.Window, "window", 32, "messages in flight")
	flag.IntVar(&c.Size, "size", 100, "content bytes per message")
	flag.DurationVar(&c.Duration, "duration", time.Second, "measuring time per target per round")
	flag.IntVar(&c.Rounds, "rounds", 5, "rounds over all targets")
	flag.DurationVar(&c.Pause, "pause", 2*time.Second, "idle time between rounds (the machine is shared)")
	flag.DurationVar(&c.Warmup, "warmup", 300*time.Millisecond, "load on every target before the rounds")
	flag.StringVar(&c.Only, "only", "", "measure only this target, beside direct, bare and proxy (for profiling)")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	flag.Parse()
	r, err := relayload.Run(c)
	if err != nil {
		benchutil.Fatal(err)
	}
	r.Print(os.Stdout)
}
