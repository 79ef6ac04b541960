package caddyqos

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/qos"
)

func init() {
	caddy.RegisterModule(new(QoSEcho))
}

// QoSEcho answers Multiplay QoS echo requests (0x59 → 0x95) on a caddy-l4 UDP
// server, with per-source rate limits and bans, an optional global capacity
// budget and an optional title allow-list. Rate-limit and ban state survives
// configuration reloads.
//
// Put it in a layer4 route on a UDP listener; use the qos matcher in front of
// it to share the port with other protocols. Keep the server's idle_timeout
// short (a few seconds): a QoS check is a burst, and each idle association
// holds a goroutine until the timeout.
type QoSEcho struct {
	// The QoS echo's options: rate, burst, ban_units, ban_duration,
	// backoff_units, capacity, capacity_burst, max_sources, source_key,
	// client_ipv6_prefix, titles, name.
	qos.Config

	svc   *qos.Service
	inApp bool // a protocol of the gamegate app: see Provision
}

// CaddyModule returns the Caddy module information.
func (*QoSEcho) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.qos",
		New: func() caddy.Module { return new(QoSEcho) },
	}
}

// Provision builds the service on the pooled source tables.
func (h *QoSEcho) Provision(ctx caddy.Context) error {
	caddyglue.WarnExposedLayer4(ctx)
	cfg := h.Config
	// Discovery's health checks from this process are answered even
	// while forged requests have their address banned.
	cfg.ProbeKey = qos.ProcessProbeKey()
	cfg.Count = QosMetrics.countFor
	cfg.Logger = ctx.Logger()
	h.svc = qos.NewService(cfg, qosTables{layer4: !h.inApp})
	switch {
	case h.Name != "":
		// Hold the named table now: the configuration this one replaces
		// lets go of it before this one's first datagram.
		if _, err := h.svc.ForListener(""); err != nil {
			return err
		}
	case !h.inApp:
		// A layer4 route learns its listeners from its associations.
		// Take over the tables of those the configuration this one
		// replaces served now, so that their bans outlive the reload.
		for _, l := range layer4Listeners.list() {
			if sourceTables.Held(h.svc.TableKey(l)) {
				if _, err := h.svc.ForListener(l); err != nil {
					return err
				}
			}
		}
	}
	return caddyglue.RegisterDatagramMetrics(ctx, &QosMetrics.MetricSet)
}

// ForListener returns the service's server for the listener: that of its
// name, or the listener's own.
func (h *QoSEcho) ForListener(listener string) (dgram.Protocol, error) {
	return h.svc.ForListener(listener)
}

// Validate checks the configuration.
func (h *QoSEcho) Validate() error { return h.Config.Validate() }

// Cleanup releases the service's holds on its source tables.
func (h *QoSEcho) Cleanup() error {
	if h.svc == nil {
		return nil
	}
	return h.svc.Close()
}

// Handle answers the datagrams of one client until the association ends.
func (h *QoSEcho) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	return caddyglue.ServeDatagrams(cx, h.svc, "the QoS echo protocol")
}

// sourceTables holds the QoS source tables across configuration reloads.
// A table destroyed takes its layer4 listener with it.
var sourceTables = caddyglue.NewLivePool[*qos.SourceTable](layer4Listeners.remove)

// qosTables lends QoS services the pooled source tables.
type qosTables struct{ layer4 bool }

func (t qosTables) Acquire(key, listener string, limit int) (*qos.SourceTable, error) {
	st, err := sourceTables.LoadOrNew(key, func() (*qos.SourceTable, error) {
		return qos.NewSourceTable(limit, nil, qos.SweepInterval), nil
	})
	if err != nil {
		return nil, err
	}
	if t.layer4 && listener != "" {
		layer4Listeners.add(key, listener, st)
	}
	return st, nil
}

func (qosTables) Release(key string) error { return sourceTables.Release(key) }

// layer4Listeners are the listeners of the pooled tables that layer4 QoS
// handlers without a name made for the local addresses their associations
// arrived at, by table key, so that the configuration that replaces
// theirs takes the tables over.
var layer4Listeners = listenerSet{byKey: make(map[string]tableListener)}

type listenerSet struct {
	mu    sync.Mutex
	byKey map[string]tableListener
}

// tableListener is the listener a table was made for.
type tableListener struct {
	listener string
	table    *qos.SourceTable
}

func (l *listenerSet) add(key, listener string, table *qos.SourceTable) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byKey[key] = tableListener{listener, table}
}

// remove forgets the listener of table, destroyed: a table made under
// the same key since (the pool forgets a key before destroying its
// table) keeps its own.
func (l *listenerSet) remove(key string, table *qos.SourceTable) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey[key].table == table {
		delete(l.byKey, key)
	}
}

func (l *listenerSet) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, tl := range l.byKey {
		if !slices.Contains(out, tl.listener) {
			out = append(out, tl.listener)
		}
	}
	return out
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	qos {
//		rate               <requests_per_second>
//		burst              <requests>
//		ban_units          <1-8>
//		ban_duration       <duration>
//		backoff_units      <0-7>
//		capacity           <requests_per_second>
//		capacity_burst     <requests>
//		max_sources        <count>
//		source_key         ip|ip_port
//		client_ipv6_prefix <bits>
//		titles             <title> [<title>...]
//		name               <name>
//	}
//
// A number is read in the range the service's Config holds it to
// (qos.Config.Validate), so that an error shows the option's line; the
// Config's Validate then checks the whole block once, its error shown at
// the line of the option it names.
func (h *QoSEcho) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	const module = "qos"
	return caddyglue.ParseConfigBlock(d, module, nil, nil, func(opt string) error {
		var err error
		switch opt {
		case "rate":
			h.Rate, err = caddyglue.ParsePositiveFloat(d)
		case "burst":
			h.Burst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "ban_units":
			h.BanUnits, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "ban_duration":
			h.BanDuration, err = caddyglue.ParseConfigDuration(d)
		case "backoff_units":
			h.BackoffUnits, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "capacity":
			h.Capacity, err = caddyglue.ParsePositiveFloat(d)
		case "capacity_burst":
			h.CapacityBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "max_sources":
			h.MaxSources, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "source_key":
			h.SourceKey, err = caddyglue.ParseOneOf(d, qos.SourceKeyIP, qos.SourceKeyIPPort)
		case "client_ipv6_prefix":
			h.ClientIPv6Prefix, err = caddyglue.ParseIntIn(d, caddyglue.ClientIPv6PrefixRange)
		case "titles":
			h.Titles, err = caddyglue.ParseArgs(d)
		case "name":
			h.Name, err = caddyglue.ParseSingleArg(d)
		default:
			return caddyglue.UnknownOption(d, module, opt)
		}
		return err
	}, h.Validate)
}

// configRange is the range the service's Config holds option opt to.
func configRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[qos.Config](opt)
}

// QosMetrics are the QoS echo handler's Prometheus metrics, shared by every
// QoS handler in the process.
var QosMetrics = newQoSMetrics()

// qosMetricSet counts what QoS handlers do, by listener: one atomic add
// per datagram, for its verdict. Every metric is derived from those counts
// when scraped, so the hot path pays for one counter, not one per metric.
type qosMetricSet struct {
	caddyglue.MetricSet
	mu                                        sync.Mutex
	listeners                                 map[string]*qosCounts // by listener label
	requests, responses, drops, bans, tracked *prometheus.Desc
}

// qosCounts are the verdicts of the datagrams one listener served.
type qosCounts struct {
	verdicts [qos.NumVerdicts]struct {
		n atomic.Uint64
		_ [56]byte // one cache line each: verdicts are counted from every core
	}
}

func (c *qosCounts) count(v qos.Verdict) { c.verdicts[v].n.Add(1) }

func newQoSMetrics() *qosMetricSet {
	m := &qosMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "qos"}, listeners: make(map[string]*qosCounts)}
	m.requests = m.Desc("requests_total", "Datagrams received by QoS echo handlers, by listener.", "listener")
	m.responses = m.Desc("responses_total", "QoS responses sent, by listener and flow control (none, backoff, ban).", "listener", "flow")
	m.drops = m.Desc("dropped_total", "QoS datagrams dropped without a response, by listener and reason.", "listener", "reason")
	m.bans = m.Desc("bans_total", "QoS sources banned, by listener and cause (rate, capacity).", "listener", "cause")
	m.tracked = m.Desc("tracked_sources", "Sources whose QoS rate and ban state is remembered.")
	m.Scraped(m.collect, m.requests, m.responses, m.drops, m.bans, m.tracked)
	return m
}

// countFor returns the function counting the verdicts of the QoS server
// of listener (qos.Config.Count): the gamegate app names a server's
// listener by its listen addresses joined by commas (dgram.ProtocolAt),
// a caddy-l4 route by the local address of its associations. Its label is
// the udp metrics' for the app's servers (the addresses joined by
// spaces), the address for caddy-l4's. The listener "" is no listener: a
// named service holds its table at Provision through it, and never
// serves there.
func (m *qosMetricSet) countFor(listener string) func(qos.Verdict) {
	if listener == "" {
		return func(qos.Verdict) {}
	}
	label := strings.ReplaceAll(listener, ",", " ")
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.listeners[label]
	if c == nil {
		c = new(qosCounts)
		m.listeners[label] = c
	}
	return c.count
}

func (m *qosMetricSet) collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for listener, c := range m.listeners {
		var n [qos.NumVerdicts]float64
		total := 0.0
		for v := range n {
			n[v] = float64(c.verdicts[v].n.Load())
			total += n[v]
		}
		counter(m.requests, total, listener)
		counter(m.responses, n[qos.Answered]+n[qos.AnsweredProbe], listener, "none")
		counter(m.responses, n[qos.AnsweredBackoff], listener, "backoff")
		counter(m.responses, n[qos.BannedRate]+n[qos.BannedCapacity], listener, "ban")
		counter(m.bans, n[qos.BannedRate], listener, "rate")
		counter(m.bans, n[qos.BannedCapacity], listener, "capacity")
		for v := qos.DroppedBanned; v < qos.NumVerdicts; v++ {
			counter(m.drops, n[v], listener, v.String())
		}
	}
	tracked := sourceTables.Sum((*qos.SourceTable).Len)
	ch <- prometheus.MustNewConstMetric(m.tracked, prometheus.GaugeValue, float64(tracked))
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QoSEcho)(nil)
	_ caddy.Validator       = (*QoSEcho)(nil)
	_ caddy.CleanerUpper    = (*QoSEcho)(nil)
	_ caddyfile.Unmarshaler = (*QoSEcho)(nil)
	_ layer4.NextHandler    = (*QoSEcho)(nil)
	_ dgram.ListenerScoped  = (*QoSEcho)(nil)
)
