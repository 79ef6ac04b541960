package caddyglue

import (
	"errors"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricSet is one module's Prometheus metrics, each named
// gamegate_<subsystem>_<name>. The metrics are process-wide, so counters
// keep counting across configuration reloads, and every configuration that
// uses the module registers the same collectors in its own registry.
type MetricSet struct {
	Subsystem  string
	Collectors []prometheus.Collector
}

func (s *MetricSet) opts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "gamegate", Subsystem: s.Subsystem, Name: name, Help: help}
}

func (s *MetricSet) Counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts(s.opts(name, help)))
	s.Collectors = append(s.Collectors, c)
	return c
}

func (s *MetricSet) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts(s.opts(name, help)), labels)
	s.Collectors = append(s.Collectors, c)
	return c
}

func (s *MetricSet) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts(s.opts(name, help)), labels)
	s.Collectors = append(s.Collectors, g)
	return g
}

// GaugeFunc adds a gauge whose value is read when scraped.
func (s *MetricSet) GaugeFunc(name, help string, value func() float64) {
	s.Collectors = append(s.Collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts(s.opts(name, help)), value))
}

// desc describes a metric of the set for scraped.
func (s *MetricSet) Desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName("gamegate", s.Subsystem, name), help, labels, nil)
}

// scraped adds metrics whose values are computed when scraped, from counts
// kept elsewhere: collect sends one value or more for each of descs.
func (s *MetricSet) Scraped(collect func(ch chan<- prometheus.Metric), descs ...*prometheus.Desc) {
	s.Collectors = append(s.Collectors, &scrapedCollector{descs: descs, collect: collect})
}

// register adds the set's collectors to a configuration's metrics registry.
// Registering them again (several handlers, or a reload that reuses the
// registry) is not an error and counts nothing twice.
func (s *MetricSet) Register(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	for _, c := range s.Collectors {
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

// LiveSet tracks values alive in the current configuration(s), for gauges
// computed at scrape time.
type LiveSet[T comparable] struct {
	mu sync.Mutex
	m  map[T]int
}

func (s *LiveSet[T]) Add(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[T]int)
	}
	s.m[v]++
}

func (s *LiveSet[T]) Remove(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[v] <= 1 {
		delete(s.m, v)
		return
	}
	s.m[v]--
}

// sum adds up f of every live value.
func (s *LiveSet[T]) Sum(f func(T) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for v := range s.m {
		n += f(v)
	}
	return n
}

// CodeCounters counts HTTP answers by status code, with the counters of
// the usual codes looked up once, so counting them allocates nothing.
type CodeCounters struct {
	vec    *prometheus.CounterVec // labelled "code"
	byCode map[int]prometheus.Counter
}

// CodeCounters adds a counter vector labelled "code", whose counters for
// the usual codes are looked up once.
func (s *MetricSet) CodeCounters(name, help string, usual ...int) CodeCounters {
	c := CodeCounters{vec: s.CounterVec(name, help, "code"), byCode: make(map[int]prometheus.Counter, len(usual))}
	for _, code := range usual {
		c.byCode[code] = c.vec.WithLabelValues(strconv.Itoa(code))
	}
	return c
}

func (c CodeCounters) Count(code int) {
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

// EnumCounters is a counter vector with one label, whose counter for each
// value of an enumeration is looked up once, so counting one on the hot path
// is one atomic add and allocates nothing.
type EnumCounters[E enumLabel] struct {
	vec *prometheus.CounterVec
	by  []prometheus.Counter
}

// NewEnumCounters adds to s the vector gamegate_<subsystem>_<name> and
// its counters for the values below n, labelled label=v.String().
func NewEnumCounters[E enumLabel](s *MetricSet, name, help, label string, n E) EnumCounters[E] {
	c := EnumCounters[E]{vec: s.CounterVec(name, help, label), by: make([]prometheus.Counter, n)}
	for v := E(0); v < n; v++ {
		c.by[v] = c.vec.WithLabelValues(v.String())
	}
	return c
}

func (c EnumCounters[E]) Count(v E) { c.by[v].Inc() }

// Interface guards
var _ prometheus.Collector = (*scrapedCollector)(nil)
