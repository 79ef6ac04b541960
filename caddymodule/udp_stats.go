package caddymodule

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gamegate/gamegate/dgram"
)

// udpStats counts what each gamegate UDP server reads and drops, by its
// listener label (its listen addresses as configured): process-wide, so
// counts go on across reloads, and labelled from the configuration only.
var udpStats = struct {
	sync.Mutex
	by map[string]*dgram.Stats
}{by: map[string]*dgram.Stats{}}

// udpStatsOf returns the counts of the UDP server listening on listen.
func udpStatsOf(listen []string) *dgram.Stats {
	label := strings.Join(listen, " ")
	udpStats.Lock()
	defer udpStats.Unlock()
	s, ok := udpStats.by[label]
	if !ok {
		s = new(dgram.Stats)
		udpStats.by[label] = s
	}
	return s
}

// udpMetrics export udpStats, the counts of every gamegate UDP server.
var udpMetrics = newUDPMetrics()

func newUDPMetrics() *metricSet {
	m := &metricSet{subsystem: "udp"}
	received := m.desc("datagrams_total", "Datagrams read by gamegate's UDP servers, by listener (the udp block's addresses as configured).", "listener")
	dropped := m.desc("dropped_total",
		"Datagrams gamegate's UDP servers dropped themselves, by listener and reason (no_protocol, too_large, write_failed); protocols count their own drops.", "listener", "reason")
	m.scraped(func(ch chan<- prometheus.Metric) {
		udpStats.Lock()
		defer udpStats.Unlock()
		for listener, s := range udpStats.by {
			ch <- prometheus.MustNewConstMetric(received, prometheus.CounterValue, float64(s.Received()), listener)
			for r := dgram.DropReason(0); r < dgram.NumDropReasons; r++ {
				ch <- prometheus.MustNewConstMetric(dropped, prometheus.CounterValue, float64(s.Dropped(r)), listener, r.String())
			}
		}
	}, received, dropped)
	return m
}
