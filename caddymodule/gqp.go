package caddymodule

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/gqp"
	"github.com/gamegate/gamegate/internal/ratelimit"
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
// It never sends a source more bytes than its query unless the source has
// passed challenge/validate; clients pad their queries (the "pad"
// extension, which gamegate's own query client uses) to get full answers.
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
	// How long validate authorises a source address. Default: 10m.
	AuthTTL caddy.Duration `json:"auth_ttl,omitempty"`
	// Time allowed for an upstream request. Default: 2s.
	UpstreamTimeout caddy.Duration `json:"upstream_timeout,omitempty"`
	// Largest datagram an answer is cut into, in bytes. Default: 1400.
	MaxDatagram int `json:"max_datagram,omitempty"`

	server *gqp.Server
	logger *zap.Logger
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
	// How long an upstream answer is reused. Default: 2s.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// Most upstream requests per second for this command, whatever the
	// queries' sources and arguments (GQP sources are not authenticated);
	// past it the command answers 31 unless a cached answer can serve.
	// Default: 10.
	UpstreamRate float64 `json:"upstream_rate,omitempty"`
	// Upstream requests for this command allowed at once. Default:
	// upstream_rate (at least 1).
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
	if h.UpstreamTimeout == 0 {
		h.UpstreamTimeout = caddy.Duration(2 * time.Second)
	}
	if err := h.Validate(); err != nil {
		return err
	}
	cfg := gqp.ServerConfig{AuthTTL: time.Duration(h.AuthTTL), MaxDatagram: h.MaxDatagram, Logins: map[string]string{}}
	if h.Identify != nil {
		cfg.Identity = gqp.Identity{GameName: h.Identify.GameName, GameVer: h.Identify.GameVer, NetVer: h.Identify.NetVer}
	}
	repl := caddy.NewReplacer()
	for login, pw := range h.Logins {
		pw = repl.ReplaceKnown(pw, "")
		if pw == "" {
			// An unset variable must not become a password anyone can send.
			return fmt.Errorf("gqp: login %q: the password is empty after replacing placeholders", login)
		}
		cfg.Logins[login] = pw
	}
	client := &http.Client{Timeout: time.Duration(h.UpstreamTimeout)}
	for name, c := range h.Commands {
		cmd := gqp.Command{Name: name, MinArgs: c.MinArgs, Protected: c.Protected}
		if c.URL != "" {
			ttl := time.Duration(c.TTL)
			if ttl == 0 {
				ttl = 2 * time.Second
			}
			rate := c.UpstreamRate
			if rate == 0 {
				rate = 10
			}
			results, err := cache.NewResults[string, []gqp.Record](1024, nil)
			if err != nil {
				return err
			}
			lim, err := ratelimit.NewLimiter(rate, cmp.Or(c.UpstreamBurst, max(1, int(rate))), nil)
			if err != nil {
				return fmt.Errorf("gqp: command %q: upstream_rate: %w", name, err)
			}
			hc := &gqp.HTTPCommand{URL: c.URL, TTL: ttl, Timeout: time.Duration(h.UpstreamTimeout), Limiter: lim,
				Client: client, Cache: results}
			cmd.Run = hc.Run
		} else {
			records := c.Records
			cmd.Run = func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status {
				for _, rec := range records {
					r.AddPair([]byte(rec.Name), []byte(rec.Value))
				}
				return wiregqp.StatusOK
			}
		}
		cfg.Commands = append(cfg.Commands, cmd)
	}
	var err error
	if h.server, err = gqp.NewServer(cfg); err != nil {
		return fmt.Errorf("gqp: %w", err)
	}
	return registerCollectors(ctx.GetMetricsRegistry(), gqpMetrics.collectors()...)
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
		c.duration(f("ttl"), cmd.TTL)
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
	c.duration("auth_ttl", h.AuthTTL)
	c.duration("upstream_timeout", h.UpstreamTimeout)
	c.optIn("max_datagram", int64(h.MaxDatagram), gqpMaxDatagramRange)
	return c.err
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
	src := gqpSource(remote)
	queue := make(chan []byte, gqpQueueLen)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for q := range queue {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(h.UpstreamTimeout)+time.Second)
			out, v := h.server.Answer(ctx, src, q)
			cancel()
			gqpMetrics.verdicts[v].Inc()
			for _, d := range out {
				if _, err := pc.WriteTo(d, remote); err != nil {
					if ce := h.logger.Check(zap.DebugLevel, "writing GQP answer"); ce != nil {
						ce.Write(zap.Stringer("to", remote), zap.Error(err))
					}
				}
			}
		}
	}()
	defer func() { close(queue); <-done }()
	drop := func() { gqpMetrics.verdicts[gqp.DroppedMalformed].Inc() }
	return readDatagrams(cx, drop, func(datagram []byte) {
		if len(datagram) > wiregqp.MaxQuery {
			drop()
			return
		}
		select {
		case queue <- append([]byte(nil), datagram...):
		default:
			gqpMetrics.busy.Inc()
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
//		upstream_timeout <duration>
//		max_datagram     <bytes>
//	}
//
// command, record and login may repeat.
func (h *GQPResponder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the handler name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, "gqp", []string{"command", "login"}, func(opt string) error {
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
			h.AuthTTL, err = parseDuration(d)
		case "upstream_timeout":
			h.UpstreamTimeout, err = parseDuration(d)
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
			c.TTL, err = parseDuration(d)
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

type gqpMetricSet struct {
	queries  *prometheus.CounterVec
	busy     prometheus.Counter
	verdicts [gqp.NumVerdicts]prometheus.Counter
}

func newGQPMetrics() *gqpMetricSet {
	const ns, sub = "gamegate", "gqp"
	m := &gqpMetricSet{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "queries_total",
			Help: "GQP queries handled by the responder, by outcome.",
		}, []string{"outcome"}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "queries_dropped_busy_total",
			Help: "GQP queries dropped because the client already had queries waiting for an upstream.",
		}),
	}
	for v := gqp.Verdict(0); v < gqp.NumVerdicts; v++ {
		m.verdicts[v] = m.queries.WithLabelValues(v.String())
	}
	return m
}

func (m *gqpMetricSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.queries, m.busy}
}

// Interface guards
var (
	_ caddy.Provisioner     = (*GQPResponder)(nil)
	_ caddy.Validator       = (*GQPResponder)(nil)
	_ caddyfile.Unmarshaler = (*GQPResponder)(nil)
	_ layer4.NextHandler    = (*GQPResponder)(nil)
)
