package benchutil

import (
	"flag"
	"fmt"
	"time"
)

// Schedule is how a workload is measured: every target warmed up, then
// measured for Duration once per round, in Rounds rounds.
type Schedule struct {
	Duration   time.Duration // measuring time per target per round
	Rounds     int           // rounds over all targets
	Pause      time.Duration // idle time between rounds (the machine is shared)
	Warmup     time.Duration // load on every target before the rounds
	CPUProfile string        // write a CPU profile of the measured rounds here
}

// AddFlags registers s's fields as the flags -duration, -rounds, -pause,
// -warmup (warmup by default) and -cpuprofile.
func (s *Schedule) AddFlags(fs *flag.FlagSet, warmup time.Duration) {
	fs.DurationVar(&s.Duration, "duration", time.Second, "measuring time per target per round")
	fs.IntVar(&s.Rounds, "rounds", 5, "rounds over all targets")
	fs.DurationVar(&s.Pause, "pause", 2*time.Second, "idle time between rounds (the machine is shared)")
	fs.DurationVar(&s.Warmup, "warmup", warmup, "load on every target before the rounds")
	fs.StringVar(&s.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
}

// Measure runs s over targets: warmup on each target in turn, then measure
// on each once per round (see Rounds), under a CPU profile of the rounds
// when s names a file. It returns the load averages Rounds returns, or the
// first error, after the target's name; no target is measured after one.
func Measure[T any](s Schedule, targets []T, name func(T) string,
	warmup func(i int, t T) error, measure func(round, i int, t T) error) ([]string, error) {
	for i, t := range targets {
		if err := warmup(i, t); err != nil {
			return nil, fmt.Errorf("%s: %w", name(t), err)
		}
	}
	stopProfile, err := StartCPUProfile(s.CPUProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	var runErr error
	loads := Rounds(s.Rounds, s.Pause, targets, func(r, i int, t T) {
		if runErr != nil {
			return
		}
		if err := measure(r, i, t); err != nil {
			runErr = fmt.Errorf("%s: %w", name(t), err)
		}
	})
	if runErr != nil {
		return nil, runErr
	}
	return loads, nil
}
