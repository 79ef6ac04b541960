package caddygqp

import (
	"fmt"
	"net/netip"

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
	// The responder's options: identify, commands, logins, auth_ttl,
	// auth_amplification, max_challenge_failures, challenge_lockout,
	// max_sources, client_ipv6_prefix, trusted_networks, upstream_timeout,
	// max_datagram_size.
	gqp.Config

	// Deprecated: the former name of max_sources, still read (with a
	// warning at provision).
	FormerMaxAuthorized int `json:"max_authorized,omitempty"`
	// Deprecated: the former name of max_datagram_size, still read (with a
	// warning at provision).
	FormerMaxDatagram int `json:"max_datagram,omitempty"`

	// The responder Provision builds, embedded so that the module serves
	// its datagrams wherever it is a dgram.Protocol.
	*gqpResponder `json:"-"`
	logger        *zap.Logger
}

type gqpResponder = gqp.Responder

// CaddyModule returns the Caddy module information.
func (*GQPResponder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.gqp",
		New: func() caddy.Module { return new(GQPResponder) },
	}
}

// Provision builds the responder and starts its workers.
func (h *GQPResponder) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	caddyglue.WarnExposedLayer4(ctx)
	if err := caddyglue.Renamed(ctx, "gqp", "max_authorized", "max_sources", &h.FormerMaxAuthorized, &h.MaxAuthorized); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "gqp", "max_datagram", "max_datagram_size", &h.FormerMaxDatagram, &h.MaxDatagram); err != nil {
		return err
	}
	cfg := h.Config
	repl := caddy.NewReplacer()
	cfg.Logins = make(map[string]string, len(h.Logins))
	for login, pw := range h.Logins {
		var err error
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
	var err error
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

// Validate checks the configuration (gqp.Config.Validate), with the
// logins' passwords as given (placeholders unreplaced).
func (h *GQPResponder) Validate() error { return h.Config.Validate() }

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
			h.Identity = gqp.Identity{GameName: args[0], GameVer: args[1], NetVer: args[2]}
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
			h.AuthTTL, err = caddyglue.ParseConfigDurationIn(d, durationRange(opt))
		case "auth_amplification":
			h.AuthAmplification, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "max_challenge_failures":
			h.MaxChallengeFailures, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "challenge_lockout":
			h.ChallengeLockout, err = caddyglue.ParseConfigDurationIn(d, durationRange(opt))
		case "max_sources":
			h.MaxAuthorized, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "client_ipv6_prefix":
			h.ClientIPv6Prefix, err = caddyglue.ParseIntIn(d, caddyglue.ClientIPv6PrefixRange)
		case "trusted_networks":
			h.TrustedNetworks, err = caddyglue.ParseArgs(d)
		case "upstream_timeout":
			h.UpstreamTimeout, err = caddyglue.ParseConfigDurationIn(d, durationRange(opt))
		case "max_datagram_size":
			h.MaxDatagram, err = caddyglue.ParseSize[int](d, configRange(opt))
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
	c := &gqp.CommandConfig{}
	block := fmt.Sprintf("gqp: command '%s'", name)
	if err := caddyglue.ParseBlock(d, block, []string{"record"}, func(opt string) error {
		switch opt {
		case "url":
			c.URL, err = caddyglue.ParseSingleArg(d)
		case "record":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("%s: record takes <name> <value>", block)
			}
			c.Records = append(c.Records, gqp.Pair{Name: args[0], Value: args[1]})
		case "protected":
			err = caddyglue.ParseFlag(d, &c.Protected)
		case "min_args":
			c.MinArgs, err = caddyglue.ParseIntIn(d, caddyglue.ConfigRange[gqp.CommandConfig](opt))
		case "ttl":
			c.TTL, err = caddyglue.ParseConfigDurationIn(d, caddyglue.ConfigDurationRange[gqp.CommandConfig](opt))
		case "upstream_rate":
			c.UpstreamRate, err = caddyglue.ParsePositiveFloat(d)
		case "upstream_burst":
			c.UpstreamBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		default:
			return caddyglue.UnknownOption(d, block, opt)
		}
		return err
	}); err != nil {
		return err
	}
	if h.Commands == nil {
		h.Commands = make(map[string]*gqp.CommandConfig)
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

// durationRange is configRange for a duration option.
func durationRange(opt string) caddyglue.DurationRange {
	return caddyglue.ConfigDurationRange[gqp.Config](opt)
}

// Interface guards
var (
	_ caddy.Provisioner     = (*GQPResponder)(nil)
	_ caddy.Validator       = (*GQPResponder)(nil)
	_ caddy.CleanerUpper    = (*GQPResponder)(nil)
	_ caddyfile.Unmarshaler = (*GQPResponder)(nil)
	_ layer4.NextHandler    = (*GQPResponder)(nil)
)
