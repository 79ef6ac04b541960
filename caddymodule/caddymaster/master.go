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
	// Servers listed at most, from all addresses. Default: 4096.
	MaxServers int `json:"max_servers,omitempty"`
	// Servers listed at most from one IP address (on different ports).
	// Default: 32.
	MaxServersPerAddress int `json:"max_servers_per_address,omitempty"`
	// How long a server stays listed after its last valid infoResponse;
	// game servers heartbeat every 5 to 15 minutes. Default: 15m.
	Expiry caddy.Duration `json:"expiry,omitempty"`
	// How long a getinfo challenge waits for the server's infoResponse;
	// heartbeats in the meantime do not extend it. Default: 2s.
	ChallengeTimeout caddy.Duration `json:"challenge_timeout,omitempty"`
	// Challenges waiting for an answer at most, from all addresses; a
	// heartbeat past this makes one of them (at random) forgotten. The
	// answer to a forgotten challenge of 12 characters (every real
	// server's) still lists the server: it is checked by its keyed hash.
	// Default: 1024.
	MaxChallenges int `json:"max_challenges,omitempty"`
	// Challenges waiting for an answer at most from one source (an IPv4
	// address or an IPv6 prefix of client_ipv6_prefix bits); its further
	// heartbeats are dropped meanwhile, so that heartbeats forged from one
	// source never make another's challenges forgotten. Default: 32.
	MaxChallengesPerAddress int `json:"max_challenges_per_address,omitempty"`
	// Heartbeats per second from one source (an IPv4 address or an IPv6
	// prefix of client_ipv6_prefix bits). Default: 1.
	HeartbeatRate float64 `json:"heartbeat_rate,omitempty"`
	// Heartbeats at once from one source. Default: 32 (one for each
	// server max_servers_per_address allows).
	HeartbeatBurst int `json:"heartbeat_burst,omitempty"`
	// List requests (getservers, getserversExt) per second from one
	// source. Default: 1.
	ListRate float64 `json:"list_rate,omitempty"`
	// List requests at once from one source. Default: 4.
	ListBurst int `json:"list_burst,omitempty"`
	// Sources each of the two per-source limits keeps at most; also the
	// networks the per-network share keeps, and the known sources.
	// Default: 65536.
	MaxSources int `json:"max_sources,omitempty"`
	// Datagrams of one list answer at most, each at most 1400 bytes; a
	// longer list is cut, its last datagram still ending it. Default: 8.
	MaxReplyDatagrams int `json:"max_reply_datagrams,omitempty"`
	// List datagrams per second to all sources together. Default: 1000.
	ReplyRate float64 `json:"reply_rate,omitempty"`
	// List datagrams at once to all sources together. Default: one
	// second of reply_rate.
	ReplyBurst int `json:"reply_burst,omitempty"`
	// List datagrams per second to one network (an IPv4 /24, an IPv6
	// /48): list requests forged from a few networks take this share of
	// reply_rate, not all of it. Default: reply_rate / 8.
	NetworkReplyRate float64 `json:"network_reply_rate,omitempty"`
	// List datagrams at once to one network. Default: reply_burst / 8
	// (at least 1) with the default network_reply_rate, else one second
	// of it.
	NetworkReplyBurst int `json:"network_reply_burst,omitempty"`
	// Of reply_rate, the list datagrams per second only known sources may
	// have: the addresses of listed servers, and sources answered in full
	// while the budget was calm (less than half of the rest used) in the
	// last hour. Other sources share the rest, so list requests forged
	// from many networks cannot keep known clients from their lists.
	// Less than reply_rate. Default: reply_rate / 4.
	KnownReplyRate float64 `json:"known_reply_rate,omitempty"`
	// Of reply_burst, the list datagrams at once kept for known sources;
	// less than reply_burst. Default: reply_burst / 4 (at least 1) with
	// the default known_reply_rate, else one second of it (less than
	// reply_burst).
	KnownReplyBurst int `json:"known_reply_burst,omitempty"`
	// Prefix length, in bits, of the IPv6 addresses one source holds.
	// Default: 64.
	ClientIPv6Prefix int `json:"client_ipv6_prefix,omitempty"`
	// With storage redis: the networks (CIDR) outside the public internet
	// in which an address names the same host from every node. A server
	// another node proved is listed here, and its status queried from
	// here, only at a public address or in one of these; a loopback or
	// private address another node proved names a host of that node's
	// network. At most 64. Default: none.
	SharedNetworks []string `json:"shared_networks,omitempty"`
	// Masters with the same name share their list, and a reloaded
	// configuration takes the list over from the one it replaces; at most
	// 64 bytes, no control characters. Default: master.
	Name string `json:"name,omitempty"`

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

// config is the handler's configuration from the module's options.
func (p *MasterProtocol) config() master.Config {
	return master.Config{
		Name:                    p.Name,
		MaxServers:              p.MaxServers,
		MaxServersPerAddress:    p.MaxServersPerAddress,
		Expiry:                  time.Duration(p.Expiry),
		ChallengeTimeout:        time.Duration(p.ChallengeTimeout),
		MaxChallenges:           p.MaxChallenges,
		MaxChallengesPerAddress: p.MaxChallengesPerAddress,
		HeartbeatRate:           p.HeartbeatRate,
		HeartbeatBurst:          p.HeartbeatBurst,
		ListRate:                p.ListRate,
		ListBurst:               p.ListBurst,
		MaxSources:              p.MaxSources,
		MaxReplyDatagrams:       p.MaxReplyDatagrams,
		ReplyRate:               p.ReplyRate,
		ReplyBurst:              p.ReplyBurst,
		NetworkReplyRate:        p.NetworkReplyRate,
		NetworkReplyBurst:       p.NetworkReplyBurst,
		KnownReplyRate:          p.KnownReplyRate,
		KnownReplyBurst:         p.KnownReplyBurst,
		ClientIPv6Prefix:        p.ClientIPv6Prefix,
		SharedNetworks:          p.SharedNetworks,
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
	if p.Name == "" {
		p.Name = master.DefaultName
	}
	reg, err := loadMasterRegistry(p.Name)
	if err != nil {
		return err
	}
	p.poolKey = p.Name // Caddy calls Cleanup after a failed Provision too
	if err := reg.share(ctx, p.Name); err != nil {
		return err
	}
	cfg := p.config()
	cfg.Registry = reg.Registry
	cfg.Count = MasterMetrics.datagrams.Count
	cfg.Sent = MasterMetrics.sent
	if p.masterServer, err = master.New(cfg); err != nil {
		return err
	}
	return MasterMetrics.Register(ctx.GetMetricsRegistry())
}

// Validate checks every option's range.
func (p *MasterProtocol) Validate() error { return p.config().Validate() }

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
	const module = "master"
	positive := caddyglue.PositiveRange // the upper bounds are Validate's
	err := caddyglue.ParseModuleBlock(d, module, []string{"shared_networks"}, func(opt string) error {
		var err error
		switch opt {
		case "max_servers":
			p.MaxServers, err = caddyglue.ParseIntIn(d, positive)
		case "max_servers_per_address":
			p.MaxServersPerAddress, err = caddyglue.ParseIntIn(d, positive)
		case "expiry":
			p.Expiry, err = caddyglue.ParseDuration(d)
		case "challenge_timeout":
			p.ChallengeTimeout, err = caddyglue.ParseDuration(d)
		case "max_challenges":
			p.MaxChallenges, err = caddyglue.ParseIntIn(d, positive)
		case "max_challenges_per_address":
			p.MaxChallengesPerAddress, err = caddyglue.ParseIntIn(d, positive)
		case "heartbeat_rate":
			p.HeartbeatRate, err = caddyglue.ParsePositiveFloat(d)
		case "heartbeat_burst":
			p.HeartbeatBurst, err = caddyglue.ParseIntIn(d, positive)
		case "list_rate":
			p.ListRate, err = caddyglue.ParsePositiveFloat(d)
		case "list_burst":
			p.ListBurst, err = caddyglue.ParseIntIn(d, positive)
		case "max_sources":
			p.MaxSources, err = caddyglue.ParseIntIn(d, positive)
		case "max_reply_datagrams":
			p.MaxReplyDatagrams, err = caddyglue.ParseIntIn(d, positive)
		case "reply_rate":
			p.ReplyRate, err = caddyglue.ParsePositiveFloat(d)
		case "reply_burst":
			p.ReplyBurst, err = caddyglue.ParseIntIn(d, positive)
		case "network_reply_rate":
			p.NetworkReplyRate, err = caddyglue.ParsePositiveFloat(d)
		case "network_reply_burst":
			p.NetworkReplyBurst, err = caddyglue.ParseIntIn(d, positive)
		case "known_reply_rate":
			p.KnownReplyRate, err = caddyglue.ParsePositiveFloat(d)
		case "known_reply_burst":
			p.KnownReplyBurst, err = caddyglue.ParseIntIn(d, positive)
		case "client_ipv6_prefix":
			p.ClientIPv6Prefix, err = caddyglue.ParseIntIn(d, positive)
		case "shared_networks":
			var nets []string
			if nets, err = caddyglue.ParseArgs(d); err == nil {
				p.SharedNetworks = append(p.SharedNetworks, nets...)
			}
		case "name":
			p.Name, err = caddyglue.ParseSingleArg(d)
		default:
			return caddyglue.UnknownOption(d, module, opt)
		}
		if err == nil {
			if verr := p.Validate(); verr != nil {
				return d.Errf("%s: %v", module, verr)
			}
		}
		return err
	})
	return err
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
