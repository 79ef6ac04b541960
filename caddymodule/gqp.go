package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/handlers/gqp"
	"github.com/gamegate/gamegate/internal/netaddr"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
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
	MaxAuthorized int `json:"max_authorized,omitempty"`
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
	MaxDatagram int `json:"max_datagram,omitempty"`

	server    *gqp.Server
	upstreams []*gqp.HTTPCommand // closed by Cleanup
	logger    *zap.Logger
}

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

// Provision builds the GQP server.
func (h *GQPResponder) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	warnExposedLayer4(ctx)
	if err := h.Validate(); err != nil {
		return err
	}
	cfg := gqp.ServerConfig{
		AuthTTL:              time.Duration(h.AuthTTL),
		AuthAmplification:    h.AuthAmplification,
		MaxChallengeFailures: h.MaxChallengeFailures,
		ChallengeLockout:     time.Duration(h.ChallengeLockout),
		MaxAuthorized:        h.MaxAuthorized,
		ClientIPv6Prefix:     h.ClientIPv6Prefix,
		MaxDatagram:          h.MaxDatagram,
		Logins:               map[string]string{},
	}
	if h.Identify != nil {
		cfg.Identity = gqp.Identity{GameName: h.Identify.GameName, GameVer: h.Identify.GameVer, NetVer: h.Identify.NetVer}
	}
	if len(h.TrustedNetworks) > 0 {
		cfg.Trusted = []netip.Prefix{}
		for _, n := range h.TrustedNetworks {
			if n != "none" {
				p, _ := parsePrefix(n)
				cfg.Trusted = append(cfg.Trusted, p)
			}
		}
	}
	repl := caddy.NewReplacer()
	for login, pw := range h.Logins {
		pw, err := replaced(repl, "gqp", fmt.Sprintf("login %q", login), pw)
		if err != nil {
			return err
		}
		cfg.Logins[login] = pw
	}
	timeout := time.Duration(h.UpstreamTimeout)
	if timeout == 0 {
		timeout = gqp.DefaultUpstreamTimeout
	}
	client := &http.Client{Timeout: timeout}
	for name, c := range h.Commands {
		cmd := gqp.Command{Name: name, MinArgs: c.MinArgs, Protected: c.Protected}
		if c.URL != "" {
			log := h.logger.With(zap.String("command", name))
			hc := &gqp.HTTPCommand{URL: c.URL, TTL: time.Duration(c.TTL), Timeout: timeout, Rate: c.UpstreamRate, Burst: c.UpstreamBurst, Client: client,
				Log: func(err error) { log.Warn("GQP command upstream failed", zap.Error(err)) }}
			cmd.Run, cmd.Cached = hc.Run, hc.Cached
			h.upstreams = append(h.upstreams, hc)
		} else {
			pairs := make([]gqp.Pair, len(c.Records))
			for i, r := range c.Records {
				pairs[i] = gqp.Pair{Name: r.Name, Value: r.Value}
			}
			cmd.Run, cmd.Cached = gqp.StaticReply(pairs)
		}
		cfg.Commands = append(cfg.Commands, cmd)
	}
	var err error
	if h.server, err = gqp.NewServer(cfg); err != nil {
		return fmt.Errorf("gqp: %w", err)
	}
	return gqpMetrics.register(ctx.GetMetricsRegistry())
}

// Cleanup ends the commands' upstream requests. They are shared by every
// query asking, so no query's end cancels them: without this, those of a
// configuration being unloaded would run on until upstream_timeout.
func (h *GQPResponder) Cleanup() error {
	for _, c := range h.upstreams {
		c.Close()
	}
	return nil
}

// Ranges of the GQP responder's options.
var (
	gqpMinArgsRange     = intRange{0, wiregqp.MaxArgs}
	gqpMaxDatagramRange = intRange{64, 65000}
)

// Validate checks the configuration.
func (h *GQPResponder) Validate() error {
	c := newChecker("gqp")
	for name, cmd := range h.Commands {
		f := func(field string) string { return fmt.Sprintf("command %q: %s", name, field) }
		if cmd == nil {
			c.fail(fmt.Sprintf("command %q:", name), "give url or records")
			continue
		}
		switch {
		case name == "":
			c.fail("commands", "needs names, got an empty one")
		case cmd.URL != "" && len(cmd.Records) > 0:
			c.fail(fmt.Sprintf("command %q:", name), "give url or records, not both")
		case cmd.URL == "" && len(cmd.Records) == 0:
			c.fail(fmt.Sprintf("command %q:", name), "give url or records")
		}
		c.in(f("min_args"), int64(cmd.MinArgs), gqpMinArgsRange)
		c.durationIn(f("ttl"), cmd.TTL, ttlRange)
		c.rate(f("upstream_rate"), f("upstream_burst"), cmd.UpstreamRate, int64(cmd.UpstreamBurst))
		if cmd.URL != "" {
			u, err := url.Parse(cmd.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				c.fail(f("url"), "%q is not an http(s) URL", cmd.URL)
			}
		}
	}
	for login := range h.Logins {
		if login == "" {
			c.fail("logins", "needs names, got an empty one")
		}
	}
	for _, n := range h.TrustedNetworks {
		if n == "none" {
			if len(h.TrustedNetworks) > 1 {
				c.fail("trusted_networks", "none must stand alone")
			}
			continue
		}
		if _, err := parsePrefix(n); err != nil {
			c.fail("trusted_networks", "%q is not a CIDR or IP address", n)
		}
	}
	c.optIn("auth_amplification", int64(h.AuthAmplification), intRange{1, 100})
	c.optIn("max_challenge_failures", int64(h.MaxChallengeFailures), intRange{1, 1000})
	c.optIn("max_authorized", int64(h.MaxAuthorized), intRange{1, 1 << 20})
	c.optIn("client_ipv6_prefix", int64(h.ClientIPv6Prefix), clientIPv6PrefixRange)
	c.durationIn("challenge_lockout", h.ChallengeLockout, ttlRange)
	c.durationIn("auth_ttl", h.AuthTTL, ttlRange)
	c.durationIn("upstream_timeout", h.UpstreamTimeout, timeoutRange)
	c.optIn("max_datagram", int64(h.MaxDatagram), gqpMaxDatagramRange)
	return c.err
}

// answerTimeout bounds one Answer: an upstream request and a second.
func (h *GQPResponder) answerTimeout() time.Duration {
	if h.UpstreamTimeout > 0 {
		return time.Duration(h.UpstreamTimeout) + time.Second
	}
	return gqp.DefaultUpstreamTimeout + time.Second
}

// gqpQueueLen is how many queries of one client may wait while an earlier
// one waits for an upstream; more are dropped, so the read loop never blocks.
const gqpQueueLen = 4

// Handle answers the queries of one client address until the association
// ends. Answers are computed off the read loop (an upstream may be slow),
// so the shared socket keeps being read for every other client.
func (h *GQPResponder) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	pc, err := packetConnOf(cx, "GQP")
	if err != nil {
		return err
	}
	remote := cx.RemoteAddr()
	src := netaddr.AddrPortOf(remote)
	queue := make(chan []byte, gqpQueueLen)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for q := range queue {
			ctx, cancel := context.WithTimeout(context.Background(), h.answerTimeout())
			out, v := h.server.Answer(ctx, src, q)
			cancel()
			gqpMetrics.queries.count(v)
			for _, d := range out {
				if _, err := pc.WriteTo(d, remote); err != nil {
					gqpMetrics.writeFailed(h.logger, remote, err)
				}
			}
		}
	}()
	defer func() { close(queue); <-done }()
	drop := func() { gqpMetrics.queries.count(gqp.DroppedMalformed) }
	return readDatagrams(cx, drop, func(datagram []byte) {
		if len(datagram) > wiregqp.MaxQuery {
			gqpMetrics.drops.count(gqpDropTooLarge)
			return
		}
		select {
		case queue <- append([]byte(nil), datagram...):
		default:
			gqpMetrics.drops.count(gqpDropQueueFull)
		}
	})
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
//		max_authorized         <count>
//		client_ipv6_prefix     <bits>
//		trusted_networks       <cidr|ip|none> ...
//		upstream_timeout <duration>
//		max_datagram     <bytes>
//	}
//
// command, record and login may repeat.
func (h *GQPResponder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseModuleBlock(d, "gqp", []string{"command", "login"}, func(opt string) error {
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
			h.AuthTTL, err = parseDurationIn(d, ttlRange)
		case "auth_amplification":
			h.AuthAmplification, err = parseIntRange(d, 1, 100)
		case "max_challenge_failures":
			h.MaxChallengeFailures, err = parseIntRange(d, 1, 1000)
		case "challenge_lockout":
			h.ChallengeLockout, err = parseDurationIn(d, ttlRange)
		case "max_authorized":
			h.MaxAuthorized, err = parseIntRange(d, 1, 1<<20)
		case "client_ipv6_prefix":
			h.ClientIPv6Prefix, err = parseIntIn(d, clientIPv6PrefixRange)
		case "trusted_networks":
			h.TrustedNetworks, err = parseArgs(d)
		case "upstream_timeout":
			h.UpstreamTimeout, err = parseDurationIn(d, timeoutRange)
		case "max_datagram":
			h.MaxDatagram, err = parseSize[int](d, gqpMaxDatagramRange)
		default:
			return unknownOption(d, "gqp", opt)
		}
		return err
	})
}

func (h *GQPResponder) parseCommand(d *caddyfile.Dispenser) error {
	name, err := parseSingleArg(d)
	if err != nil {
		return err
	}
	if _, dup := h.Commands[name]; dup {
		return d.Errf("gqp: duplicate command '%s'", name)
	}
	c := &GQPCommand{}
	if err := parseBlock(d, fmt.Sprintf("gqp: command '%s'", name), []string{"record"}, func(opt string) error {
		switch opt {
		case "url":
			c.URL, err = parseSingleArg(d)
		case "record":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("gqp: command '%s': record takes <name> <value>", name)
			}
			c.Records = append(c.Records, GQPRecord{Name: args[0], Value: args[1]})
		case "protected":
			if d.NextArg() {
				return d.ArgErr()
			}
			c.Protected = true
		case "min_args":
			c.MinArgs, err = parseIntIn(d, gqpMinArgsRange)
		case "ttl":
			c.TTL, err = parseDurationIn(d, ttlRange)
		case "upstream_rate":
			c.UpstreamRate, err = parsePositiveFloat(d)
		case "upstream_burst":
			c.UpstreamBurst, err = parseIntIn(d, burstRange)
		default:
			return unknownOption(d, fmt.Sprintf("gqp: command '%s'", name), opt)
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

var gqpMetrics = newGQPMetrics()

// gqpDrop is why the GQP responder dropped a query before the server
// answered it, or failed to send an answer.
type gqpDrop uint8

const (
	// The answer needs the upstream and the queue of queries waiting for
	// it is full.
	gqpDropQueueFull gqpDrop = iota
	// The answer needs the upstream and the source is neither trusted nor
	// validated: only such sources may wait for it (the request starts, so
	// a retry finds the answer cached).
	gqpDropUnvalidated
	// The query is longer than a GQP query may be.
	gqpDropTooLarge
	// The kernel refused to send an answer datagram.
	gqpDropWriteFailed
	// The query was waiting for a worker when its configuration was
	// reloaded or stopped.
	gqpDropStopped
	numGQPDrops
)

var gqpDropNames = [numGQPDrops]string{"queue_full", "unvalidated", "too_large", "write_failed", "stopped"}

func (d gqpDrop) String() string { return gqpDropNames[d] }

type gqpMetricSet struct {
	metricSet
	queries enumCounters[gqp.Verdict]
	drops   enumCounters[gqpDrop]
}

func newGQPMetrics() *gqpMetricSet {
	m := &gqpMetricSet{metricSet: metricSet{subsystem: "gqp"}}
	m.queries = newEnumCounters(&m.metricSet, "queries_total",
		"GQP queries handled by the responder, by outcome.",
		"outcome", gqp.NumVerdicts)
	m.drops = newEnumCounters(&m.metricSet, "dropped_total",
		"GQP queries the responder dropped before answering, and answer datagrams it could not send, by reason (queue_full, unvalidated, too_large, write_failed, stopped).",
		"reason", numGQPDrops)
	return m
}

// writeFailed counts an answer datagram the kernel refused to send to to.
func (m *gqpMetricSet) writeFailed(log *zap.Logger, to fmt.Stringer, err error) {
	m.drops.count(gqpDropWriteFailed)
	if ce := log.Check(zap.DebugLevel, "writing GQP answer"); ce != nil {
		ce.Write(zap.Stringer("to", to), zap.Error(err))
	}
}

// Interface guards
var (
	_ caddy.Provisioner     = (*GQPResponder)(nil)
	_ caddy.Validator       = (*GQPResponder)(nil)
	_ caddy.CleanerUpper    = (*GQPResponder)(nil)
	_ caddyfile.Unmarshaler = (*GQPResponder)(nil)
	_ layer4.NextHandler    = (*GQPResponder)(nil)
)
