package caddyglue

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

// UdpStatsOf returns the counts of the UDP server listening on listen.
func UdpStatsOf(listen []string) *dgram.Stats {
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

// UdpMetrics export udpStats, the counts of every gamegate UDP server.
var UdpMetrics = newUDPMetrics()

func newUDPMetrics() *MetricSet {
	m := &MetricSet{Subsystem: "udp"}
	received := m.Desc("datagrams_total", "Datagrams read by gamegate's UDP servers, by listener (the udp block's addresses as configured).", "listener")
	dropped := m.Desc("dropped_total",
		"Datagrams gamegate's UDP servers dropped themselves, by listener and reason (no_protocol, too_large, write_failed); protocols count their own drops.", "listener", "reason")
	m.Scraped(func(ch chan<- prometheus.Metric) {
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
