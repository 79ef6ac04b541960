package caddymaster

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/quake3"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/handlers/serverlist"
	"github.com/gamegate/gamegate/store/redisstore"
)

func init() {
	caddy.RegisterModule(new(MasterProtocol))
}

// MasterProtocol is a master server of the Quake 3 / DarkPlaces family on
// a gamegate UDP server, compatible with dpmaster: game servers register
// by heartbeat (listed only once they answer a getinfo challenge sent to
// their own address), clients read the list with getservers and
// getserversExt. Every table it keeps is bounded, and list answers, which
// are larger than the requests by nature, are bounded per request, per
// source and in total (see docs/handlers/master.md).
type MasterProtocol struct {
	// The master's options: max_servers, max_servers_per_address, expiry,
	// challenge_timeout, max_challenges, max_challenges_per_address,
	// heartbeat_rate, heartbeat_burst, list_rate, list_burst, max_sources,
	// max_reply_datagrams, reply_rate, reply_burst, network_reply_rate,
	// network_reply_burst, known_reply_rate, known_reply_burst,
	// client_ipv6_prefix, shared_networks, name.
	master.Config

	// The master Provision builds, embedded so that the module serves its
	// datagrams.
	*masterServer `json:"-"`
	poolKey       string
}

type masterServer = master.Master

// CaddyModule returns the Caddy module information.
func (*MasterProtocol) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.udp.protocols.master",
		New: func() caddy.Module { return new(MasterProtocol) },
	}
}

// masterRegistries keep each named master's list, and its servers' live
// statuses, across reloads.
var masterRegistries = caddy.NewUsagePool()

type pooledRegistry struct {
	*master.Registry
	statuses *serverlist.Statuses
}

func (r pooledRegistry) Destruct() error {
	r.Unshare()
	liveMasterRegistries.Remove(r.Registry)
	r.statuses.Close()
	return nil
}

// share shares the registry of the master named name through the
// configuration's storage when nodes share it (storage redis): a server
// registered on one node is listed by every node. With another storage
// the registry is this process's own.
//
// Sharing starts with the configuration (WhenStarted), not when it is only
// validated: servers adopted from the store would otherwise be queried by
// `gamegate validate`.
func (r pooledRegistry) share(ctx caddy.Context, name string) error {
	return caddyglue.WhenStarted(ctx, func() {
		if shared, ok := ctx.Storage().(*redisstore.Store); ok {
			r.Share(shared, "master:"+name, ctx.Logger(), MasterMetrics.storeFailures.Inc)
		} else {
			r.Unshare()
		}
	})
}

// loadMasterRegistry returns the registry of the master named name; the
// caller releases it with masterRegistries.Delete(name). The statuses of
// its servers are queried with the Quake 3 protocol.
func loadMasterRegistry(name string) (pooledRegistry, error) {
	val, _, err := masterRegistries.LoadOrNew(name, func() (caddy.Destructor, error) {
		q3 := &quake3.QueryProtocol{UDPExchange: query.UDPExchange{Timeout: time.Second}}
		statuses, err := serverlist.NewStatuses(q3.Status, nil)
		if err != nil {
			return nil, err
		}
		r := master.NewRegistry(nil)
		liveMasterRegistries.Add(r)
		return pooledRegistry{r, statuses}, nil
	})
	if err != nil {
		return pooledRegistry{}, err
	}
	return val.(pooledRegistry), nil
}

// Provision builds the master, adopting the list of the configuration it
// replaces.
func (p *MasterProtocol) Provision(ctx caddy.Context) error {
	name := p.Config.WithDefaults().Name
	reg, err := loadMasterRegistry(name)
	if err != nil {
		return err
	}
	p.poolKey = name // Caddy calls Cleanup after a failed Provision too
	if err := reg.share(ctx, name); err != nil {
		return err
	}
	cfg := p.Config
	cfg.Registry = reg.Registry
	cfg.Count = MasterMetrics.datagrams.Count
	cfg.Sent = MasterMetrics.sent
	if p.masterServer, err = master.New(cfg); err != nil {
		return err
	}
	return MasterMetrics.Register(ctx.GetMetricsRegistry())
}

// Validate checks every option's range.
func (p *MasterProtocol) Validate() error { return p.Config.Validate() }

// Cleanup releases the list; the configuration that replaces this one
// has taken it over already.
func (p *MasterProtocol) Cleanup() error {
	if p.poolKey != "" {
		_, err := masterRegistries.Delete(p.poolKey)
		return err
	}
	return nil
}

// UnmarshalCaddyfile sets up the master from Caddyfile tokens. Syntax:
//
//	master {
//		max_servers             <count>
//		max_servers_per_address <count>
//		expiry                  <duration>
//		challenge_timeout       <duration>
//		max_challenges          <count>
//		max_challenges_per_address <count>
//		heartbeat_rate          <per second>
//		heartbeat_burst         <count>
//		list_rate               <per second>
//		list_burst              <count>
//		max_sources             <count>
//		max_reply_datagrams     <count>
//		reply_rate              <datagrams per second>
//		reply_burst             <datagrams>
//		network_reply_rate      <datagrams per second>
//		network_reply_burst     <datagrams>
//		known_reply_rate        <datagrams per second>
//		known_reply_burst       <datagrams>
//		client_ipv6_prefix      <bits>
//		shared_networks         <cidr...>
//		name                    <name>
//	}
//
// shared_networks may be repeated, each adding networks. The ranges are
// the handler's (master.Config.Validate), checked once the block is read.
func (p *MasterProtocol) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseConfigBlock(d, "master", &p.Config, blockSyntax{repeatable: []string{"shared_networks"}})
}

// MasterMetrics count what every master does.
var MasterMetrics = newMasterMetrics()

type masterMetricSet struct {
	caddyglue.MetricSet
	datagrams     caddyglue.EnumCounters[master.Verdict]
	replies       prometheus.Counter
	bytes         prometheus.Counter
	storeFailures prometheus.Counter
}

func (m *masterMetricSet) sent(n int) {
	m.replies.Inc()
	m.bytes.Add(float64(n))
}

// liveMasterRegistries are the lists of the running configuration(s).
var liveMasterRegistries caddyglue.LiveSet[*master.Registry]

func newMasterMetrics() *masterMetricSet {
	m := &masterMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "master"}}
	m.datagrams = caddyglue.NewEnumCounters(&m.MetricSet, "datagrams_total",
		"Datagrams handled by the master servers, by verdict.", "verdict", master.NumVerdicts)
	m.replies = m.Counter("sent_datagrams_total", "Datagrams the master servers sent (getinfo challenges and list answers).")
	m.bytes = m.Counter("sent_bytes_total", "Bytes the master servers sent, UDP payload.")
	m.storeFailures = m.Counter("shared_store_failures_total",
		"Exchanges with the shared store (storage redis) that failed: while they do, this node lists its own registrations and those it read last.")
	m.GaugeFunc("servers", "Game servers listed by the master servers.", func() float64 {
		return float64(liveMasterRegistries.Sum(func(r *master.Registry) int { n, _ := r.Len(); return n }))
	})
	m.GaugeFunc("challenges", "Getinfo challenges waiting for an answer.", func() float64 {
		return float64(liveMasterRegistries.Sum(func(r *master.Registry) int { _, n := r.Len(); return n }))
	})
	return m
}

// Interface guards
var (
	_ dgram.Protocol        = (*MasterProtocol)(nil)
	_ caddy.Provisioner     = (*MasterProtocol)(nil)
	_ caddy.Validator       = (*MasterProtocol)(nil)
	_ caddy.CleanerUpper    = (*MasterProtocol)(nil)
	_ caddyfile.Unmarshaler = (*MasterProtocol)(nil)
)
