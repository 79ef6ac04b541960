package caddygqp

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/gqp"
)

func init() {
	caddy.RegisterModule(new(GQPResponder))
}

// GQPResponder answers GQP queries on a caddy-l4 UDP listener for a game
// that does not speak GQP itself: identify from the configuration, static
// records, and commands answered from an HTTP upstream (the command becomes
// a GET of a URL; the JSON object that comes back becomes records).
//
// It never sends a source more bytes than its query unless the source is in
// trusted_networks (default: loopback), which get full answers, or has
// passed challenge/validate from the same address and port, which get at
// most auth_amplification times their query; other clients pad their
// queries (the "pad" extension, which gamegate's own query client uses) to
// get full answers.
//
// Answers that need no upstream are sent at once. A query that needs a
// command's upstream waits for one of a few workers, behind a queue shared
// by every source (and, on a gamegate UDP server, by its readers), and only
// if its source is trusted or has validated; anyone else's query starts
// the request and is dropped, and its retry finds the answer cached.
type GQPResponder struct {
	// What identify answers. Default: empty names and versions.
	Identify *GQPIdentify `json:"identify,omitempty"`
	// Custom commands by name (Caddyfile: one command block each).
	// Default: none; the required commands are always answered.
	Commands map[string]*GQPCommand `json:"commands,omitempty"`
	// Logins for challenge: login → password (Caddyfile: one login line
	// each). Placeholders such as {env.GQP_ADMIN_PASSWORD} are replaced; a
	// password that is empty afterwards is refused. Default: none (challenge
	// then always answers 32).
	Logins map[string]string `json:"logins,omitempty"`
	// How long validate authorises a source address and port. Default:
	// 10m.
	AuthTTL caddy.Duration `json:"auth_ttl,omitempty"`
	// An answer to a validated source is at most this many times its
	// query's size. Default: 10.
	AuthAmplification int `json:"auth_amplification,omitempty"`
	// Failed challenges a source (an IPv4 address, or an IPv6 prefix of
	// client_ipv6_prefix bits) may make before it is locked out. Only
	// failures of challenges that echo the source's cookie count (trusted
	// networks need none), so a spoofed source cannot lock out the real
	// one. Default: 5.
	MaxChallengeFailures int `json:"max_challenge_failures,omitempty"`
	// How long a source that failed too many challenges is refused them,
	// and how long a failure is remembered. Default: 10m.
	ChallengeLockout caddy.Duration `json:"challenge_lockout,omitempty"`
	// Most entries in each of the tables of validated sources, pending
	// challenges and failing sources. One network (an IPv4 /24, an IPv6
	// /48) has at most 16 failing sources (fewer below 32 entries: at most
	// half the table, or its one entry), and one allocation (an IPv4 /16,
	// an IPv6 /32) at most a sixteenth of the table (never less than a
	// network); their other sources are refused challenges until some of
	// their failures expire. Default: 10000.
	MaxSources int `json:"max_sources,omitempty"`
	// The length, in bits, of the IPv6 prefix that is one source for
	// challenge failures and lockouts (32 to 128). Default: 64.
	ClientIPv6Prefix int `json:"client_ipv6_prefix,omitempty"`
	// Networks (CIDRs or IPs) whose sources get full answers without
	// padding and challenge without a cookie; protected commands still
	// need challenge/validate. List only networks whose source addresses
	// cannot be forged. "none" alone trusts no network. Default:
	// 127.0.0.0/8 and ::1.
	TrustedNetworks []string `json:"trusted_networks,omitempty"`
	// Time allowed for an upstream request, at most 1h. Default: 2s.
	UpstreamTimeout caddy.Duration `json:"upstream_timeout,omitempty"`
	// Largest datagram an answer is cut into, in bytes. Default: 1400.
	MaxDatagramSize int `json:"max_datagram_size,omitempty"`

	// Deprecated: the former name of max_sources, still read (with a
	// warning at provision).
	MaxAuthorized int `json:"max_authorized,omitempty"`
	// Deprecated: the former name of max_datagram_size, still read (with a
	// warning at provision).
	MaxDatagram int `json:"max_datagram,omitempty"`

	// The responder Provision builds, embedded so that the module serves
	// its datagrams wherever it is a dgram.Protocol.
	*gqpResponder `json:"-"`
	logger        *zap.Logger
}

type gqpResponder = gqp.Responder

// GQPIdentify is the game identification identify returns.
type GQPIdentify struct {
	// The game's tag (gamename).
	GameName string `json:"gamename,omitempty"`
	// The game's version (gamever).
	GameVer string `json:"gamever,omitempty"`
	// The oldest network version it plays with (netver).
	NetVer string `json:"netver,omitempty"`
}

// GQPCommand is one custom command: static records, or records from an
// HTTP upstream.
type GQPCommand struct {
	// HTTP(S) URL fetched with GET; the command's arguments are added as
	// repeated "arg" query parameters. Its JSON object becomes records.
	// Give url or records. Default: none.
	URL string `json:"url,omitempty"`
	// Static name/value records, answered in order (Caddyfile: one record
	// line each). Default: none.
	Records []GQPRecord `json:"records,omitempty"`
	// Only sources that passed challenge/validate may use it. Default:
	// false.
	Protected bool `json:"protected,omitempty"`
	// Fewest arguments it needs. Default: 0.
	MinArgs int `json:"min_args,omitempty"`
	// How long an upstream answer is reused, at most 24h. Default: 2s.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// Most upstream requests per second for this command, whatever the
	// queries' sources (GQP sources are not authenticated), counted
	// separately for queries with and without arguments; past it the
	// command answers 31 unless a cached answer can serve. Default: 10.
	UpstreamRate float64 `json:"upstream_rate,omitempty"`
	// Upstream requests for this command allowed at once. Default: one
	// second of upstream_rate, rounded up.
	UpstreamBurst int `json:"upstream_burst,omitempty"`
}

// GQPRecord is a static name/value record.
type GQPRecord struct {
	// The record's name.
	Name string `json:"name"`
	// Its value.
	Value string `json:"value"`
}

// CaddyModule returns the Caddy module information.
func (*GQPResponder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.gqp",
		New: func() caddy.Module { return new(GQPResponder) },
	}
}

// config is the handler's configuration from the module's options, with
// the logins' passwords as given (placeholders unreplaced).
func (h *GQPResponder) config() (gqp.Config, error) {
	cfg := gqp.Config{
		Logins:               h.Logins,
		AuthTTL:              time.Duration(h.AuthTTL),
		AuthAmplification:    h.AuthAmplification,
		MaxChallengeFailures: h.MaxChallengeFailures,
		ChallengeLockout:     time.Duration(h.ChallengeLockout),
		MaxAuthorized:        h.MaxSources,
		ClientIPv6Prefix:     h.ClientIPv6Prefix,
		MaxDatagram:          h.MaxDatagramSize,
		UpstreamTimeout:      time.Duration(h.UpstreamTimeout),
	}
	if h.Identify != nil {
		cfg.Identity = gqp.Identity{GameName: h.Identify.GameName, GameVer: h.Identify.GameVer, NetVer: h.Identify.NetVer}
	}
	for _, name := range slices.Sorted(maps.Keys(h.Commands)) {
		c := h.Commands[name]
		if c == nil {
			return cfg, fmt.Errorf("command %q: give url or records", name)
		}
		cmd := gqp.CommandConfig{Name: name, URL: c.URL, Protected: c.Protected, MinArgs: c.MinArgs,
			TTL: time.Duration(c.TTL), UpstreamRate: c.UpstreamRate, UpstreamBurst: c.UpstreamBurst}
		for _, r := range c.Records {
			cmd.Records = append(cmd.Records, gqp.Pair{Name: r.Name, Value: r.Value})
		}
		cfg.Commands = append(cfg.Commands, cmd)
	}
	if len(h.TrustedNetworks) > 0 {
		cfg.Trusted = []netip.Prefix{}
		for _, n := range h.TrustedNetworks {
			if n == "none" {
				if len(h.TrustedNetworks) > 1 {
					return cfg, errors.New("trusted_networks: none must stand alone")
				}
				continue
			}
			p, err := caddyglue.ParsePrefix(n)
			if err != nil {
				return cfg, fmt.Errorf("trusted_networks: %q is not a CIDR or IP address", n)
			}
			cfg.Trusted = append(cfg.Trusted, p)
		}
	}
	return cfg, nil
}

// Provision builds the responder and starts its workers.
func (h *GQPResponder) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	caddyglue.WarnExposedLayer4(ctx)
	if err := caddyglue.Renamed(ctx, "gqp", "max_authorized", "max_sources", &h.MaxAuthorized, &h.MaxSources); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "gqp", "max_datagram", "max_datagram_size", &h.MaxDatagram, &h.MaxDatagramSize); err != nil {
		return err
	}
	cfg, err := h.config()
	if err != nil {
		return err
	}
	repl := caddy.NewReplacer()
	cfg.Logins = make(map[string]string, len(h.Logins))
	for login, pw := range h.Logins {
		if cfg.Logins[login], err = caddyglue.Replaced(repl, "", fmt.Sprintf("login %q", login), pw); err != nil {
			return err
		}
	}
	cfg.Count = GqpMetrics.queries.Count
	cfg.Dropped = GqpMetrics.drops.Count
	cfg.UpstreamFailed = func(command string, err error) {
		h.logger.Warn("GQP command upstream failed", zap.String("command", command), zap.Error(err))
	}
	cfg.WriteFailed = func(to netip.AddrPort, err error) {
		if ce := h.logger.Check(zap.DebugLevel, "writing GQP answer"); ce != nil {
			ce.Write(zap.Stringer("to", to), zap.Error(err))
		}
	}
	if h.gqpResponder, err = gqp.NewResponder(cfg); err != nil {
		return err
	}
	return caddyglue.RegisterDatagramMetrics(ctx, &GqpMetrics.MetricSet)
}

// Cleanup stops the workers, then ends the commands' upstream requests
// (gqp.Responder.Close): a reload or stop does not wait for an upstream.
func (h *GQPResponder) Cleanup() error {
	if h.gqpResponder != nil {
		h.gqpResponder.Close()
	}
	return nil
}

// Validate checks the configuration (gqp.Config.Validate).
func (h *GQPResponder) Validate() error {
	cfg, err := h.config()
	if err != nil {
		return err
	}
	return cfg.Validate()
}

// Handle serves the association's datagrams with the responder: answered
// at once, or queued for its workers, which the gamegate app's servers
// share (see gqp.Responder).
func (h *GQPResponder) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	return caddyglue.ServeDatagrams(cx, h.gqpResponder, "GQP")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	gqp {
//		identify <gamename> <gamever> <netver>
//		command <name> {
//			url      <http(s)-url>
//			record   <name> <value>
//			protected
//			min_args <count>
//			ttl      <duration>
//			upstream_rate <requests_per_second>
//			upstream_burst <requests>
//		}
//		login            <login> <password>
//		auth_ttl         <duration>
//		auth_amplification     <factor>
//		max_challenge_failures <count>
//		challenge_lockout      <duration>
//		max_sources            <count>
//		client_ipv6_prefix     <bits>
//		trusted_networks       <cidr|ip|none> ...
//		upstream_timeout       <duration>
//		max_datagram_size      <bytes>
//	}
//
// command, record and login may repeat.
func (h *GQPResponder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseRenamedModuleBlock(d, "gqp", []string{"command", "login"}, gqpFormerNames, func(opt string) error {
		var err error
		switch opt {
		case "identify":
			args := d.RemainingArgs()
			if len(args) != 3 {
				return d.Errf("gqp: identify takes <gamename> <gamever> <netver>")
			}
			h.Identify = &GQPIdentify{GameName: args[0], GameVer: args[1], NetVer: args[2]}
		case "command":
			err = h.parseCommand(d)
		case "login":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("gqp: login takes <login> <password>")
			}
			if h.Logins == nil {
				h.Logins = make(map[string]string)
			}
			if _, dup := h.Logins[args[0]]; dup {
				return d.Errf("gqp: duplicate login '%s'", args[0])
			}
			h.Logins[args[0]] = args[1]
		case "auth_ttl":
			h.AuthTTL, err = caddyglue.ParseDurationIn(d, caddyglue.TtlRange)
		case "auth_amplification":
			h.AuthAmplification, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "max_challenge_failures":
			h.MaxChallengeFailures, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "challenge_lockout":
			h.ChallengeLockout, err = caddyglue.ParseDurationIn(d, caddyglue.TtlRange)
		case "max_sources":
			h.MaxSources, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "client_ipv6_prefix":
			h.ClientIPv6Prefix, err = caddyglue.ParseIntIn(d, caddyglue.ClientIPv6PrefixRange)
		case "trusted_networks":
			h.TrustedNetworks, err = caddyglue.ParseArgs(d)
		case "upstream_timeout":
			h.UpstreamTimeout, err = caddyglue.ParseDurationIn(d, caddyglue.TimeoutRange)
		case "max_datagram_size":
			h.MaxDatagramSize, err = caddyglue.ParseSize[int](d, configRange(opt))
		default:
			return caddyglue.UnknownOption(d, "gqp", opt)
		}
		return err
	})
}

// gqpFormerNames are the GQP responder's renamed options.
var gqpFormerNames = caddyglue.FormerNames{"max_authorized": "max_sources", "max_datagram": "max_datagram_size"}

func (h *GQPResponder) parseCommand(d *caddyfile.Dispenser) error {
	name, err := caddyglue.ParseSingleArg(d)
	if err != nil {
		return err
	}
	if _, dup := h.Commands[name]; dup {
		return d.Errf("gqp: duplicate command '%s'", name)
	}
	c := &GQPCommand{}
	if err := caddyglue.ParseBlock(d, fmt.Sprintf("gqp: command '%s'", name), []string{"record"}, func(opt string) error {
		switch opt {
		case "url":
			c.URL, err = caddyglue.ParseSingleArg(d)
		case "record":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("gqp: command '%s': record takes <name> <value>", name)
			}
			c.Records = append(c.Records, GQPRecord{Name: args[0], Value: args[1]})
		case "protected":
			err = caddyglue.ParseFlag(d, &c.Protected)
		case "min_args":
			c.MinArgs, err = caddyglue.ParseIntIn(d, caddyglue.ConfigRange[gqp.CommandConfig](opt))
		case "ttl":
			c.TTL, err = caddyglue.ParseDurationIn(d, caddyglue.TtlRange)
		case "upstream_rate":
			c.UpstreamRate, err = caddyglue.ParsePositiveFloat(d)
		case "upstream_burst":
			c.UpstreamBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		default:
			return caddyglue.UnknownOption(d, fmt.Sprintf("gqp: command '%s'", name), opt)
		}
		return err
	}); err != nil {
		return err
	}
	if h.Commands == nil {
		h.Commands = make(map[string]*GQPCommand)
	}
	h.Commands[name] = c
	return nil
}

var GqpMetrics = newGQPMetrics()

type gqpMetricSet struct {
	caddyglue.MetricSet
	queries caddyglue.EnumCounters[gqp.Verdict]
	drops   caddyglue.EnumCounters[gqp.Drop]
}

func newGQPMetrics() *gqpMetricSet {
	m := &gqpMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "gqp"}}
	m.queries = caddyglue.NewEnumCounters(&m.MetricSet, "queries_total",
		"GQP queries handled by the responder, by outcome.",
		"outcome", gqp.NumVerdicts)
	m.drops = caddyglue.NewEnumCounters(&m.MetricSet, "dropped_total",
		"GQP queries the responder dropped before answering, and answer datagrams it could not send, by reason (queue_full, unvalidated, too_large, write_failed, stopped).",
		"reason", gqp.NumDrops)
	return m
}

// configRange is the range the responder's Config holds option opt to.
func configRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[gqp.Config](opt)
}

// Interface guards
var (
	_ caddy.Provisioner     = (*GQPResponder)(nil)
	_ caddy.Validator       = (*GQPResponder)(nil)
	_ caddy.CleanerUpper    = (*GQPResponder)(nil)
	_ caddyfile.Unmarshaler = (*GQPResponder)(nil)
	_ layer4.NextHandler    = (*GQPResponder)(nil)
)
