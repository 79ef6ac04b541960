package caddymodule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wireqos "github.com/gamegate/gamegate/wire/qos"
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
	// Sustained requests per second one source may send. Default: 10.
	Rate float64 `json:"rate,omitempty"`
	// Requests one source may send at once before the rate applies; a QoS
	// check sends 5 to 20 in a burst. Default: 40.
	Burst int `json:"burst,omitempty"`
	// The ban announced to a source that goes over its rate or is turned away
	// for capacity, in protocol units of 2 minutes (1-8). Default: 1.
	BanUnits int `json:"ban_units,omitempty"`
	// How long a banned source is ignored. Clients stay away for the
	// announced ban plus a margin whatever this says, so it only matters for
	// clients that do not honour the ban. Default: ban_units × 2 minutes.
	BanDuration caddy.Duration `json:"ban_duration,omitempty"`
	// When 1-7, a source that has spent more than half of its burst is asked
	// to back off voluntarily for this many 2-minute units, before it is
	// banned. Default: 0 (never ask).
	BackoffUnits int `json:"backoff_units,omitempty"`
	// Requests per second answered across all sources. Past it, the source
	// whose request finds the budget empty is banned: which sources are
	// turned away is random, weighted by how much each sends. Default: 0 (no
	// global budget).
	Capacity float64 `json:"capacity,omitempty"`
	// Requests beyond the steady capacity that may be answered at once.
	// Default: one second of capacity, rounded up.
	CapacityBurst int `json:"capacity_burst,omitempty"`
	// The most sources whose rate and ban state is remembered; past it the
	// source seen least recently is forgotten. Bounds memory under a flood
	// from many addresses. Default: 100000.
	MaxSources int `json:"max_sources,omitempty"`
	// What a source is: "ip" (an IPv4 address or an IPv6 /64, whatever the
	// port) or "ip_port" (address and port). Default: ip.
	SourceKey string `json:"source_key,omitempty"`
	// Game titles to answer; requests with other titles are dropped.
	// Default: every title.
	Titles []string `json:"titles,omitempty"`
	// Handlers with the same name (and max_sources and source_key) share
	// their rate and ban state, and a reloaded configuration takes the state
	// over from the one it replaces. Default: the listener's own state: in
	// the gamegate app, that of the server's listen addresses; in a layer4
	// route, that of the local address each association arrived at.
	Name string `json:"name,omitempty"`

	named    *qosServer // with a name: served on every listener
	tableKey string     // the table of named
	byPort   bool
	inApp    bool // a protocol of the gamegate app: see ForListener
	logger   *zap.Logger

	// Without a name, each listener has its own engine on its own table
	// (ForListener).
	mu      sync.Mutex
	byLocal map[string]*qosServer // by table key
}

// CaddyModule returns the Caddy module information.
func (*QoSEcho) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.qos",
		New: func() caddy.Module { return new(QoSEcho) },
	}
}

const (
	qosDefaultRate       = 10
	qosDefaultBurst      = 40
	qosDefaultMaxSources = 100_000
	qosSweepInterval     = 10 * time.Second
)

// sourceTables holds the QoS source tables across configuration reloads.
var sourceTables = caddy.NewUsagePool()

func (h *QoSEcho) setDefaults() {
	if h.Rate == 0 {
		h.Rate = qosDefaultRate
	}
	if h.Burst == 0 {
		h.Burst = qosDefaultBurst
	}
	if h.BanUnits == 0 {
		h.BanUnits = 1
	}
	if h.BanDuration == 0 {
		h.BanDuration = caddy.Duration(time.Duration(h.BanUnits) * wireqos.Unit)
	}
	if h.Capacity > 0 && h.CapacityBurst == 0 {
		h.CapacityBurst = ratelimit.DefaultBurst(h.Capacity)
	}
	if h.MaxSources == 0 {
		h.MaxSources = qosDefaultMaxSources
	}
	if h.SourceKey == "" {
		h.SourceKey = "ip"
	}
}

func (h *QoSEcho) engineConfig() qos.Config {
	return qos.Config{
		Rate:          h.Rate,
		Burst:         h.Burst,
		BanUnits:      h.BanUnits,
		BanDuration:   time.Duration(h.BanDuration),
		BackoffUnits:  h.BackoffUnits,
		Capacity:      h.Capacity,
		CapacityBurst: h.CapacityBurst,
		Titles:        h.Titles,
		// Discovery's health checks from this process are answered even
		// while forged requests have their address banned.
		ProbeKey: qos.ProcessProbeKey(),
	}
}

// Provision sets up the handler and adopts (or creates) its source table.
func (h *QoSEcho) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	warnExposedLayer4(ctx)
	h.setDefaults()
	if err := h.Validate(); err != nil {
		return err
	}
	h.byPort = h.SourceKey == "ip_port"
	h.byLocal = make(map[string]*qosServer)
	switch {
	case h.Name != "":
		key := h.Name + h.tableSuffix()
		engine, err := h.newEngine(key)
		if err != nil {
			return err
		}
		h.tableKey, h.named = key, &qosServer{h, engine}
	case h.inApp:
		// The app calls ForListener with its server's addresses.
	default:
		// A layer4 route: the tables come with the associations
		// (ForListener). Take over those of the configuration this one
		// replaces now, so that their bans outlive the reload.
		for _, key := range localTables.keys(h.tableSuffix()) {
			if _, err := h.adopt(key); err != nil {
				return err
			}
		}
	}
	return qosMetrics.register(ctx.GetMetricsRegistry())
}

// ForListener returns the server of the listener named listener: the
// handler's own with a name, else one on the listener's own table.
func (h *QoSEcho) ForListener(listener string) (dgram.Protocol, error) {
	if h.named != nil {
		return h.named, nil
	}
	key := "qos@" + listener + h.tableSuffix()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.adopt(key)
}

// tableSuffix is what a table key adds to the table's name: what the table
// holds, so that two handlers never share a table of other settings.
func (h *QoSEcho) tableSuffix() string {
	return "/" + strconv.Itoa(h.MaxSources) + "/" + h.SourceKey
}

// newEngine returns an engine on the pooled table of key, taking a hold on
// the table that Cleanup releases.
func (h *QoSEcho) newEngine(key string) (*qos.Engine, error) {
	val, _, err := sourceTables.LoadOrNew(key, func() (caddy.Destructor, error) {
		t := qos.NewSourceTable(h.MaxSources, nil, qosSweepInterval)
		liveSourceTables.add(t)
		return destructTable{t, key}, nil
	})
	if err != nil {
		return nil, err
	}
	engine, err := qos.NewEngine(h.engineConfig(), val.(destructTable).SourceTable)
	if err != nil {
		_, _ = sourceTables.Delete(key)
		return nil, err
	}
	return engine, nil
}

// adopt returns the server of the table key, making it (and holding the
// table) the first time. The caller holds h.mu or has h to itself.
func (h *QoSEcho) adopt(key string) (*qosServer, error) {
	if h.byLocal == nil {
		return nil, errors.New("the handler has been cleaned up")
	}
	if s := h.byLocal[key]; s != nil {
		return s, nil
	}
	e, err := h.newEngine(key)
	if err != nil {
		return nil, err
	}
	s := &qosServer{h, e}
	h.byLocal[key] = s
	if !h.inApp {
		localTables.add(key)
	}
	return s, nil
}

// qosServer serves QoS requests with one engine.
type qosServer struct {
	h      *QoSEcho
	engine *qos.Engine
}

// Match reports whether the datagram looks like a QoS echo request.
func (s *qosServer) Match(datagram []byte) bool { return matchesQoS(datagram) }

// ServeDatagram answers one QoS request, appending the response to w.
func (s *qosServer) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	source := qos.SourceOfAddrPort(src, s.h.byPort)
	resp, v := s.engine.Handle(source, datagram, w.Buffer(wireqos.MaxPacket))
	qosMetrics.count(v)
	if v == qos.BannedRate || v == qos.BannedCapacity {
		if ce := s.h.logger.Check(zap.DebugLevel, "banned QoS source"); ce != nil {
			ce.Write(zap.Stringer("source", source), zap.Stringer("cause", v))
		}
	}
	if resp != nil {
		w.WriteTo(resp, src)
	}
}

// destructTable releases a source table when no configuration uses it.
type destructTable struct {
	*qos.SourceTable
	key string
}

func (d destructTable) Destruct() error {
	liveSourceTables.remove(d.SourceTable)
	localTables.remove(d.key)
	return d.SourceTable.Destruct()
}

// localTables are the keys of the pooled tables layer4 handlers without a
// name made for the local addresses their associations arrived at, so that
// the configuration that replaces theirs takes them over.
var localTables = tableKeys{byKey: make(map[string]bool)}

type tableKeys struct {
	mu    sync.Mutex
	byKey map[string]bool
}

func (k *tableKeys) add(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byKey[key] = true
}

func (k *tableKeys) remove(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.byKey, key)
}

// keys returns the keys that end in suffix.
func (k *tableKeys) keys(suffix string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for key := range k.byKey {
		if strings.HasPrefix(key, "qos@") && strings.HasSuffix(key, suffix) {
			out = append(out, key)
		}
	}
	return out
}

// Ranges of the QoS handler's options.
var (
	qosBanUnitsRange     = intRange{1, 8}
	qosBackoffUnitsRange = intRange{0, 7}
	qosMaxSourcesRange   = intRange{1, 1 << 30}
)

// Validate checks the configuration.
func (h *QoSEcho) Validate() error {
	c := newChecker("qos")
	c.rate("rate", "burst", h.Rate, int64(h.Burst))
	c.optIn("ban_units", int64(h.BanUnits), qosBanUnitsRange)
	c.durationIn("ban_duration", h.BanDuration, ttlRange)
	c.in("backoff_units", int64(h.BackoffUnits), qosBackoffUnitsRange)
	c.rate("capacity", "capacity_burst", h.Capacity, int64(h.CapacityBurst))
	c.optIn("max_sources", int64(h.MaxSources), qosMaxSourcesRange)
	c.oneOf("source_key", h.SourceKey, "ip", "ip_port")
	for _, t := range h.Titles {
		if t == "" || len(t) > wireqos.MaxTitle {
			c.fail("titles", "must be 1 to %d bytes long, not %q", wireqos.MaxTitle, t)
		}
	}
	if c.err != nil {
		return c.err
	}
	cfg := h.engineConfig()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	return nil
}

// Cleanup releases the handler's holds on its source tables.
func (h *QoSEcho) Cleanup() error {
	var errs []error
	if h.tableKey != "" {
		_, err := sourceTables.Delete(h.tableKey)
		errs = append(errs, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for key := range h.byLocal {
		_, err := sourceTables.Delete(key)
		errs = append(errs, err)
	}
	h.byLocal = nil
	return errors.Join(errs...)
}

// Handle answers the datagrams of one client until the association ends.
func (h *QoSEcho) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	return serveDatagrams(cx, h, "the QoS echo protocol")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	qos {
//		rate           <requests_per_second>
//		burst          <requests>
//		ban_units      <1-8>
//		ban_duration   <duration>
//		backoff_units  <0-7>
//		capacity       <requests_per_second>
//		capacity_burst <requests>
//		max_sources    <count>
//		source_key     ip|ip_port
//		titles         <title> [<title>...]
//		name           <name>
//	}
func (h *QoSEcho) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseModuleBlock(d, "qos", nil, func(opt string) error {
		var err error
		switch opt {
		case "rate":
			h.Rate, err = parsePositiveFloat(d)
		case "burst":
			h.Burst, err = parseIntIn(d, burstRange)
		case "ban_units":
			h.BanUnits, err = parseIntIn(d, qosBanUnitsRange)
		case "ban_duration":
			h.BanDuration, err = parseDurationIn(d, ttlRange)
		case "backoff_units":
			h.BackoffUnits, err = parseIntIn(d, qosBackoffUnitsRange)
		case "capacity":
			h.Capacity, err = parsePositiveFloat(d)
		case "capacity_burst":
			h.CapacityBurst, err = parseIntIn(d, burstRange)
		case "max_sources":
			h.MaxSources, err = parseIntIn(d, qosMaxSourcesRange)
		case "source_key":
			h.SourceKey, err = parseOneOf(d, "ip", "ip_port")
		case "titles":
			h.Titles, err = parseArgs(d)
		case "name":
			h.Name, err = parseSingleArg(d)
		default:
			return unknownOption(d, "qos", opt)
		}
		return err
	})
}

// qosMetrics are the QoS echo handler's Prometheus metrics, shared by every
// QoS handler in the process.
var qosMetrics = newQoSMetrics()

var liveSourceTables liveSet[*qos.SourceTable]

// qosMetricSet counts what QoS handlers do: one atomic add per datagram,
// for its verdict. Every metric is derived from those counts when scraped,
// so the hot path pays for one counter, not one per metric.
type qosMetricSet struct {
	metricSet
	verdicts [qos.NumVerdicts]struct {
		n atomic.Uint64
		_ [56]byte // one cache line each: verdicts are counted from every core
	}
	requests, responses, drops, bans, tracked *prometheus.Desc
}

func newQoSMetrics() *qosMetricSet {
	m := &qosMetricSet{metricSet: metricSet{subsystem: "qos"}}
	m.requests = m.desc("requests_total", "Datagrams received by QoS echo handlers.")
	m.responses = m.desc("responses_total", "QoS responses sent, by flow control (none, backoff, ban).", "flow")
	m.drops = m.desc("dropped_total", "QoS datagrams dropped without a response, by reason.", "reason")
	m.bans = m.desc("bans_total", "QoS sources banned, by cause (rate, capacity).", "cause")
	m.tracked = m.desc("tracked_sources", "Sources whose QoS rate and ban state is remembered.")
	m.scraped(m.collect, m.requests, m.responses, m.drops, m.bans, m.tracked)
	return m
}

func (m *qosMetricSet) count(v qos.Verdict) { m.verdicts[v].n.Add(1) }

func (m *qosMetricSet) collect(ch chan<- prometheus.Metric) {
	var n [qos.NumVerdicts]float64
	total := 0.0
	for v := range n {
		n[v] = float64(m.verdicts[v].n.Load())
		total += n[v]
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	counter(m.requests, total)
	counter(m.responses, n[qos.Answered]+n[qos.AnsweredProbe], "none")
	counter(m.responses, n[qos.AnsweredBackoff], "backoff")
	counter(m.responses, n[qos.BannedRate]+n[qos.BannedCapacity], "ban")
	counter(m.bans, n[qos.BannedRate], "rate")
	counter(m.bans, n[qos.BannedCapacity], "capacity")
	for v := qos.DroppedBanned; v < qos.NumVerdicts; v++ {
		counter(m.drops, n[v], v.String())
	}
	tracked := liveSourceTables.sum((*qos.SourceTable).Len)
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
