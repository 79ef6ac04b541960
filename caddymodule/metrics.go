package caddymodule

import (
	"errors"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// registerCollectors adds gamegate's collectors to a configuration's metrics
// registry. The collectors are process-wide, so counters keep counting across
// configuration reloads; registering one twice (several handlers, or a reload
// that reuses the registry) is not an error.
func registerCollectors(reg *prometheus.Registry, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				continue
			}
			return err
		}
	}
	return nil
}

// liveSet tracks values alive in the current configuration(s), for gauges
// computed at scrape time.
type liveSet[T comparable] struct {
	mu sync.Mutex
	m  map[T]int
}

func (s *liveSet[T]) add(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[T]int)
	}
	s.m[v]++
}

func (s *liveSet[T]) remove(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[v] <= 1 {
		delete(s.m, v)
		return
	}
	s.m[v]--
}

func (s *liveSet[T]) each(f func(T)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for v := range s.m {
		f(v)
	}
}

// codeCounters counts HTTP answers by status code, with the counters of
// the usual codes looked up once, so counting them allocates nothing.
type codeCounters struct {
	vec    *prometheus.CounterVec // labelled "code"
	byCode map[int]prometheus.Counter
}

func newCodeCounters(vec *prometheus.CounterVec, usual ...int) codeCounters {
	c := codeCounters{vec: vec, byCode: make(map[int]prometheus.Counter, len(usual))}
	for _, code := range usual {
		c.byCode[code] = vec.WithLabelValues(strconv.Itoa(code))
	}
	return c
}

func (c codeCounters) count(code int) {
	if n, ok := c.byCode[code]; ok {
		n.Inc()
		return
	}
	c.vec.WithLabelValues(strconv.Itoa(code)).Inc()
}

// enumLabel is an enumeration counted by label value: its values run from 0
// up to a count, each with its label value as String.
type enumLabel interface {
	~uint8
	String() string
}

// enumCounters is a counter vector with one label, whose counter for each
// value of an enumeration is looked up once, so counting one on the hot path
// is one atomic add and allocates nothing.
type enumCounters[E enumLabel] struct {
	vec *prometheus.CounterVec
	by  []prometheus.Counter
}

// newEnumCounters makes the vector gamegate_<subsystem>_<name> and its
// counters for the values below n, labelled label=v.String().
func newEnumCounters[E enumLabel](subsystem, name, help, label string, n E) enumCounters[E] {
	opts := prometheus.CounterOpts{Namespace: "gamegate", Subsystem: subsystem, Name: name, Help: help}
	c := enumCounters[E]{vec: prometheus.NewCounterVec(opts, []string{label}), by: make([]prometheus.Counter, n)}
	for v := E(0); v < n; v++ {
		c.by[v] = c.vec.WithLabelValues(v.String())
	}
	return c
}

func (c enumCounters[E]) count(v E) { c.by[v].Inc() }
