// Command relayload measures messages forwarded between two loopback
// clients per second through gamegate's relay (the gamegate app and a
// caddy-l4 route) against a bare Go forwarder, caddy-l4's UDP proxy, coturn
// and pion/turn, in the same rounds (see package bench/internal/relayload).
// Run it with
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
	benchutil.Child()
	var c relayload.Config
	flag.IntVar(&c.Window, "window", 32, "messages in flight")
	flag.IntVar(&c.Size, "size", 100, "content bytes per message")
	c.AddFlags(flag.CommandLine, 300*time.Millisecond)
	flag.StringVar(&c.Only, "only", "", "measure only this target, beside direct, bare and proxy (for profiling)")
	noTURN := flag.Bool("no-turn", false, "leave coturn and pion/turn out")
	flag.Parse()
	if !*noTURN {
		root, err := benchutil.RepoRoot()
		if err != nil {
			benchutil.Fatal(err)
		}
		dir, err := os.MkdirTemp("", "gamegate-turn")
		if err != nil {
			benchutil.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if c.TURN, err = relayload.BuildTURN(root, dir); err != nil {
			benchutil.Fatal(err)
		}
	}
	r, err := relayload.Run(c)
	if err != nil {
		benchutil.Fatal(err)
	}
	r.Print(os.Stdout)
}
