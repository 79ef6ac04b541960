package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
)

// dgramWorkload runs package dgram's BenchmarkEcho and
// BenchmarkEchoOneInFlight (its UDP server against a bare Go echo loop,
// with a window of datagrams in flight per client and with one) once per
// round, and compares each variant with the bare loop of the same round
// and benchmark.
func dgramWorkload(rounds int, benchtime string, pause time.Duration, log io.Writer) (*benchutil.Workload, error) {
	dir, err := os.MkdirTemp("", "gamegate-dgram")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "dgram.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "github.com/gamegate/gamegate/dgram")
	build.Stderr = log
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("go test -c ./dgram: %w", err)
	}
	w := &benchutil.Workload{Unit: "round trips/s",
		Command: fmt.Sprintf("go run ./bench/run -only dgram -rounds %d", rounds)}
	loads := []string{benchutil.LoadAverage()}
	for r := range rounds {
		if r > 0 {
			time.Sleep(pause)
		}
		cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", "^BenchmarkEcho(OneInFlight)?$", "-test.benchtime", benchtime)
		cmd.Stderr = log
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("dgram benchmarks: %w\n%s", err, out)
		}
		if err := addDgramRound(w, out, r); err != nil {
			return nil, err
		}
		loads = append(loads, benchutil.LoadAverage())
	}
	w.Loads = loads
	for _, t := range w.Targets {
		if len(t.Rates) != rounds {
			return nil, fmt.Errorf("dgram benchmarks: %s measured in %d of %d rounds", t.Name, len(t.Rates), rounds)
		}
		bench, variant, _ := strings.Cut(t.Name, "/")
		if variant != "bare" {
			w.Comparisons = append(w.Comparisons, benchutil.Comparison{Target: t.Name, Baseline: bench + "/bare"})
		}
	}
	if len(w.Comparisons) == 0 {
		return nil, fmt.Errorf("dgram benchmarks: no variant beside the bare loop")
	}
	return w, nil
}

// addDgramRound adds one round's "BenchmarkEcho/variant-N ... X
// roundtrips/s" lines to w's targets.
func addDgramRound(w *benchutil.Workload, out []byte, round int) error {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.HasPrefix(f[0], "BenchmarkEcho") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') {
			name = name[:i] // the GOMAXPROCS suffix
		}
		rate := -1.0
		for i := 1; i+1 < len(f); i++ {
			if f[i+1] == "roundtrips/s" {
				rate, _ = strconv.ParseFloat(f[i], 64)
			}
		}
		if rate < 0 {
			continue
		}
		t := w.Target(name)
		if t == nil {
			if round > 0 {
				return fmt.Errorf("dgram benchmarks: %s appeared in round %d", name, round+1)
			}
			label := strings.Replace(name, "/", ": ", 1)
			t = &benchutil.Target{Name: name, Label: label}
			w.Targets = append(w.Targets, t)
		}
		t.Rates = append(t.Rates, rate)
	}
	return sc.Err()
}
