// Package benchutil holds what gamegate's load programs share: an
// in-process Caddy started from a Caddyfile, free loopback ports, and
// percentile summaries.
package benchutil

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4"

	_ "github.com/gamegate/gamegate"
)

// StartCaddy loads a Caddyfile into this process's Caddy, logging errors
// only. Stop it with caddy.Stop.
func StartCaddy(caddyfile string) error {
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		return err
	}
	m["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}}
	if _, ok := m["admin"]; !ok {
		m["admin"] = map[string]any{"disabled": true}
	}
	cfg, _ = json.Marshal(m)
	return caddy.Load(cfg, false)
}

// StartCaddyOnFreePorts loads the Caddyfile config returns, calling it
// again (for new ports from FreeAddr) when a port it chose was taken in
// the meantime: the machine may be shared.
func StartCaddyOnFreePorts(config func() string) error {
	var err error
	for range 5 {
		if err = StartCaddy(config()); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
	return err
}

// FreeAddr returns a loopback address whose port (udp or tcp) was free a
// moment ago.
func FreeAddr(network string) string {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Fatal prints err and exits.
func Fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// Percentile returns the p-quantile (0..1) of sorted durations, in
// microseconds.
func Percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(float64(len(sorted))*p))].Nanoseconds()) / 1000
}

// Sorted returns the durations sorted.
func Sorted(d []time.Duration) []time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// LoadAverage returns the system's load average over the last minute as
// /proc/loadavg gives it, or "?": results on a shared machine mean little
// without it.
func LoadAverage() string {
	if l := LoadAverages(); l != nil {
		return l[0]
	}
	return "?"
}

// LoadAverages returns the system's 1, 5 and 15 minute load averages as
// /proc/loadavg gives them, or nil.
func LoadAverages() []string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	return f[:3]
}

// Spread returns the median, the smallest and the largest of xs (ratios
// measured in separate rounds), or zeros if there are none.
func Spread(xs []float64) (median, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return median, s[0], s[len(s)-1]
}

// FormatSpread formats a ratio's median and range: "1.02× (0.97–1.10)".
func FormatSpread(xs []float64) string {
	if len(xs) == 0 {
		return "–" // nothing measured
	}
	m, lo, hi := Spread(xs)
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", m, lo, hi)
}

// ProcessCPU returns the CPU time (user and system) this process has used
// so far. Unlike throughput, CPU time per message hardly depends on what
// else the machine runs: a process is charged only while it runs.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Rounds runs each target once per round, rounds times, with pause between
// rounds, alternating the order (reversed in odd rounds) so that no target
// always runs first or last while the machine's load drifts. It returns the
// load average before the first round and after each.
func Rounds[T any](rounds int, pause time.Duration, targets []T, run func(round, i int, t T)) []string {
	loads := []string{LoadAverage()}
	for r := range rounds {
		if r > 0 {
			time.Sleep(pause)
		}
		order := slices.Clone(targets)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for i, t := range order {
			run(r, i, t)
		}
		loads = append(loads, LoadAverage())
	}
	return loads
}

// StartCPUProfile starts profiling the process's CPU into the file at path
// and returns the function that stops it and closes the file; with path
// empty it does nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
