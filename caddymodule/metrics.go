package caddymodule

import (
	"errors"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metricSet is one module's Prometheus metrics, each named
// gamegate_<subsystem>_<name>. The metrics are process-wide, so counters
// keep counting across configuration reloads, and every configuration that
// uses the module registers the same collectors in its own registry.
type metricSet struct {
	subsystem  string
	collectors []prometheus.Collector
}

func (s *metricSet) opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "gamegate", Subsystem: s.subsystem, Name: name, Help: help}
}

func (s *metricSet) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts(s.opts(name, help)))
	s.collectors = append(s.collectors, c)
	return c
}

func (s *metricSet) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts(s.opts(name, help)), labels)
	s.collectors = append(s.collectors, c)
	return c
}

func (s *metricSet) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts(s.opts(name, help)), labels)
	s.collectors = append(s.collectors, g)
	return g
}

// gaugeFunc adds a gauge whose value is read when scraped.
func (s *metricSet) gaugeFunc(name, help string, value func() float64) {
	s.collectors = append(s.collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts(s.opts(name, help)), value))
}

// desc describes a metric of the set for scraped.
func (s *metricSet) desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName("gamegate", s.subsystem, name), help, labels, nil)
}

// scraped adds metrics whose values are computed when scraped, from counts
// kept elsewhere: collect sends one value or more for each of descs.
func (s *metricSet) scraped(collect func(ch chan<- prometheus.Metric), descs ...*prometheus.Desc) {
	s.collectors = append(s.collectors, &scrapedCollector{descs: descs, collect: collect})
}

// register adds the set's collectors to a configuration's metrics registry.
// Registering them again (several handlers, or a reload that reuses the
// registry) is not an error and counts nothing twice.
func (s *metricSet) register(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	for _, c := range s.collectors {
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

type scrapedCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

// Describe implements prometheus.Collector.
func (c *scrapedCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *scrapedCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

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

// sum adds up f of every live value.
func (s *liveSet[T]) sum(f func(T) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for v := range s.m {
		n += f(v)
	}
	return n
}

// codeCounters counts HTTP answers by status code, with the counters of
// the usual codes looked up once, so counting them allocates nothing.
type codeCounters struct {
	vec    *prometheus.CounterVec // labelled "code"
	byCode map[int]prometheus.Counter
}

// codeCounters adds a counter vector labelled "code", whose counters for
// the usual codes are looked up once.
func (s *metricSet) codeCounters(name, help string, usual ...int) codeCounters {
	c := codeCounters{vec: s.counterVec(name, help, "code"), byCode: make(map[int]prometheus.Counter, len(usual))}
	for _, code := range usual {
		c.byCode[code] = c.vec.WithLabelValues(strconv.Itoa(code))
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

// newEnumCounters adds to s the vector gamegate_<subsystem>_<name> and
// its counters for the values below n, labelled label=v.String().
func newEnumCounters[E enumLabel](s *metricSet, name, help, label string, n E) enumCounters[E] {
	c := enumCounters[E]{vec: s.counterVec(name, help, label), by: make([]prometheus.Counter, n)}
	for v := E(0); v < n; v++ {
		c.by[v] = c.vec.WithLabelValues(v.String())
	}
	return c
}

func (c enumCounters[E]) count(v E) { c.by[v].Inc() }

// Interface guards
var _ prometheus.Collector = (*scrapedCollector)(nil)
