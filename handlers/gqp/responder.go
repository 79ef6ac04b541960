package gqp

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/netaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// Bounds Config.Validate checks, beside the defaults of ServerConfig and
// HTTPCommand. Every wait derived from them (an upstream request and a
// second) is far from time.Duration's limit.
const (
	MaxAuthAmplification    = 100
	MaxMaxChallengeFailures = 1000
	MaxMaxAuthorized        = 1 << 20
	MinMaxDatagram          = 64
	MaxMaxDatagram          = 65000
	// MaxLifetime bounds auth_ttl, challenge_lockout and a command's ttl.
	MaxLifetime        = 24 * time.Hour
	MaxUpstreamTimeout = time.Hour
)

// The responder's workers: queries that wait for a command's upstream
// are answered by ResponderWorkers goroutines, with at most
// ResponderQueue waiting for them, from all sources.
const (
	ResponderWorkers = 4
	ResponderQueue   = 64
)

// Config is the configuration of a Responder: the GQP responder's options,
// whose JSON is the gqp module's (which embeds it). Zero values mean the
// defaults. The names in Validate's errors are the options' (JSON and
// Caddyfile).
type Config struct {
	// What identify answers. Default: empty names and versions.
	Identity Identity `json:"identify,omitzero"`
	// Custom commands by name (Caddyfile: one command block each).
	// Default: none; the required commands are always answered.
	Commands map[string]*CommandConfig `json:"commands,omitempty"`
	// Logins for challenge: login → password (Caddyfile: one login line
	// each). Placeholders such as {env.GQP_ADMIN_PASSWORD} are replaced; a
	// password that is empty afterwards is refused. Default: none (challenge
	// then always answers 32).
	Logins map[string]string `json:"logins,omitempty"`
	// How long validate authorises a source address and port, at most 24h.
	// Default: 10m.
	AuthTTL duration.Duration `json:"auth_ttl,omitempty"`
	// An answer to a validated source is at most this many times its
	// query's size (1-100). Default: 10.
	AuthAmplification int `json:"auth_amplification,omitempty"`
	// Failed challenges a source (an IPv4 address, or an IPv6 prefix of
	// client_ipv6_prefix bits) may make before it is locked out (1-1000).
	// Only failures of challenges that echo the source's cookie count
	// (trusted networks need none), so a spoofed source cannot lock out
	// the real one. Default: 5.
	MaxChallengeFailures int `json:"max_challenge_failures,omitempty"`
	// How long a source that failed too many challenges is refused them,
	// and how long a failure is remembered, at most 24h. Default: 10m.
	ChallengeLockout duration.Duration `json:"challenge_lockout,omitempty"`
	// Most entries in each of the tables of validated sources, pending
	// challenges and failing sources (at most 1048576). One network (an
	// IPv4 /24, an IPv6 /48) has at most 16 failing sources (fewer below
	// 32 entries: at most half the table, or its one entry), and one
	// allocation (an IPv4 /16, an IPv6 /32) at most a sixteenth of the
	// table (never less than a network); their other sources are refused
	// challenges until some of their failures expire. Default: 10000.
	MaxAuthorized int `json:"max_sources,omitempty"`
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
	UpstreamTimeout duration.Duration `json:"upstream_timeout,omitempty"`
	// Largest datagram an answer is cut into, in bytes (64-65000).
	// Default: 1400.
	MaxDatagram int `json:"max_datagram_size,omitempty"`

	// Count receives what the server did with each query it answered or
	// refused (metrics). Default: none.
	Count func(Verdict) `json:"-"`
	// Dropped receives why a query was dropped before the server answered
	// it, or an answer datagram could not be sent (metrics). Default: none.
	Dropped func(Drop) `json:"-"`
	// UpstreamFailed is told why a command's upstream request failed.
	// Default: none.
	UpstreamFailed func(command string, err error) `json:"-"`
	// WriteFailed is told that an answer datagram to to could not be
	// sent, after Dropped(DropWriteFailed). Default: none.
	WriteFailed func(to netip.AddrPort, err error) `json:"-"`
}

// trusted returns the networks of TrustedNetworks: nil (loopback) when
// none are given, empty for "none".
func (c *Config) trusted() ([]netip.Prefix, error) {
	switch {
	case len(c.TrustedNetworks) == 0:
		return nil, nil
	case slices.Contains(c.TrustedNetworks, "none"):
		if len(c.TrustedNetworks) > 1 {
			return nil, errors.New("trusted_networks: none must stand alone")
		}
		return []netip.Prefix{}, nil
	}
	return netaddr.ParsePrefixes("trusted_networks", c.TrustedNetworks)
}

// CommandConfig is a custom command of a Config: static records, or
// records from an HTTP upstream (see HTTPCommand).
type CommandConfig struct {
	// HTTP(S) URL fetched with GET; the command's arguments are added as
	// repeated "arg" query parameters. Its JSON object becomes records.
	// Give url or records. Default: none.
	URL string `json:"url,omitempty"`
	// Static name/value records, answered in order (Caddyfile: one record
	// line each). Default: none.
	Records []Pair `json:"records,omitempty"`
	// Only sources that passed challenge/validate may use it. Default:
	// false.
	Protected bool `json:"protected,omitempty"`
	// Fewest arguments it needs. Default: 0.
	MinArgs int `json:"min_args,omitempty"`
	// How long an upstream answer is reused, at most 24h. Default: 2s.
	TTL duration.Duration `json:"ttl,omitempty"`
	// Most upstream requests per second for this command, whatever the
	// queries' sources (GQP sources are not authenticated), counted
	// separately for queries with and without arguments; past it the
	// command answers 31 unless a cached answer can serve. Default: 10.
	UpstreamRate float64 `json:"upstream_rate,omitempty"`
	// Upstream requests for this command allowed at once. Default: one
	// second of upstream_rate, rounded up.
	UpstreamBurst int `json:"upstream_burst,omitempty"`
}

// Validate checks a command's own options, named as the command's options
// are (min_args, ttl, upstream_rate, upstream_burst, url); zero values
// (the defaults) pass. Config.Validate names the command.
func (cmd *CommandConfig) Validate() error {
	var v bounds.Check
	v.Int("min_args", cmd.MinArgs, 0, wiregqp.MaxArgs)
	v.Duration("ttl", cmd.TTL.Std(), 0, MaxLifetime)
	v.Add(ratelimit.ValidateOptions("upstream_rate", "upstream_burst", cmd.UpstreamRate, cmd.UpstreamBurst, ratelimit.MaxBurst))
	if cmd.URL != "" {
		u, err := url.Parse(cmd.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.Failf("url %q is not an http(s) URL", cmd.URL)
		}
	}
	return v.Err()
}

// Validate checks every option; zero values (the defaults) pass.
func (c *Config) Validate() error {
	var v bounds.Check
	if _, err := c.trusted(); err != nil {
		v.Add(err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Commands)) {
		cmd := c.Commands[name]
		if cmd == nil { // JSON null
			v.Failf("command %q: give url or records", name)
			continue
		}
		switch name {
		case "":
			v.Failf("commands: needs names, got an empty one")
		case "identify", "echo", "challenge", "validate", "extensions", PadCommand:
			v.Failf("command %s is built in", name)
		}
		switch {
		case cmd.URL != "" && len(cmd.Records) > 0:
			v.Failf("command %q: give url or records, not both", name)
		case cmd.URL == "" && len(cmd.Records) == 0:
			v.Failf("command %q: give url or records", name)
		}
		for i, r := range cmd.Records {
			if r.Name == "" { // as JSON's null
				v.Failf("command %q: record %d has no name", name, i+1)
			}
		}
		if err := cmd.Validate(); err != nil {
			v.Failf("command %q: %w", name, err)
		}
	}
	for login, pw := range c.Logins {
		switch {
		case login == "":
			v.Failf("logins: needs names, got an empty one")
		case pw == "":
			v.Failf("login %q: the password is empty", login)
		}
	}
	v.Int("auth_amplification", c.AuthAmplification, 1, MaxAuthAmplification)
	v.Int("max_challenge_failures", c.MaxChallengeFailures, 1, MaxMaxChallengeFailures)
	v.Int("max_sources", c.MaxAuthorized, 1, MaxMaxAuthorized)
	v.Add(clientaddr.ValidateIPv6Prefix("client_ipv6_prefix", c.ClientIPv6Prefix))
	v.Duration("challenge_lockout", c.ChallengeLockout.Std(), 0, MaxLifetime)
	v.Duration("auth_ttl", c.AuthTTL.Std(), 0, MaxLifetime)
	v.Duration("upstream_timeout", c.UpstreamTimeout.Std(), 0, MaxUpstreamTimeout)
	v.Int("max_datagram_size", c.MaxDatagram, MinMaxDatagram, MaxMaxDatagram)
	return v.Err()
}

// Drop is why the responder dropped a query before the server answered
// it, or failed to send an answer.
type Drop uint8

// Drops.
const (
	// DropQueueFull: the answer needs an upstream and the queue of queries
	// waiting for one is full.
	DropQueueFull Drop = iota
	// DropUnvalidated: the answer needs an upstream and the source is
	// neither trusted nor validated; only such sources may wait for one
	// (the request starts, so a retry finds the answer cached).
	DropUnvalidated
	// DropTooLarge: the datagram is longer than a GQP query may be.
	DropTooLarge
	// DropWriteFailed: the kernel refused to send an answer datagram.
	DropWriteFailed
	// DropStopped: the query was waiting for a worker when the responder
	// was closed (a configuration reload or stop).
	DropStopped
	NumDrops
)

var dropNames = [NumDrops]string{"queue_full", "unvalidated", "too_large", "write_failed", "stopped"}

func (d Drop) String() string {
	if d < NumDrops {
		return dropNames[d]
	}
	return "unknown"
}

// Responder serves GQP as a dgram.Protocol. The reader answers what needs
// no upstream (built-in and static commands, cached answers) at once. A
// query that needs a command's HTTP upstream waits for a few workers
// behind a bounded queue, and only if its source is trusted or has
// validated: spoofed sources cannot fill the queue, and other sources'
// queries are dropped while the upstream request they started runs (their
// retry finds the answer cached). The readers never wait; drops are
// counted by reason (Config.Dropped).
type Responder struct {
	cfg       Config
	server    *Server
	upstreams []*HTTPCommand
	answerBy  time.Duration // bound of one Answer: an upstream request and a second

	free    chan *job // jobs not in use: the queue's bound
	workers dgram.Workers[*job]
}

// job is one query waiting for a worker, in a buffer allocated once.
type job struct {
	conn  *dgram.Conn
	src   netip.AddrPort
	n     int
	query [wiregqp.MaxQuery]byte
}

// NewResponder builds a responder for cfg, which Validate must accept, and
// starts its workers; Close stops them.
func NewResponder(cfg Config) (*Responder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	trusted, err := cfg.trusted()
	if err != nil {
		return nil, err
	}
	timeout := cfg.UpstreamTimeout.Std()
	if timeout == 0 {
		timeout = DefaultUpstreamTimeout
	}
	sc := ServerConfig{
		Identity:             cfg.Identity,
		Logins:               cfg.Logins,
		AuthTTL:              cfg.AuthTTL.Std(),
		AuthAmplification:    cfg.AuthAmplification,
		MaxChallengeFailures: cfg.MaxChallengeFailures,
		ChallengeLockout:     cfg.ChallengeLockout.Std(),
		MaxAuthorized:        cfg.MaxAuthorized,
		ClientIPv6Prefix:     cfg.ClientIPv6Prefix,
		MaxDatagram:          cfg.MaxDatagram,
		Trusted:              trusted,
	}
	r := &Responder{cfg: cfg, answerBy: timeout + time.Second}
	client := &http.Client{Timeout: timeout}
	for _, name := range slices.Sorted(maps.Keys(cfg.Commands)) {
		c := cfg.Commands[name]
		cmd := Command{Name: name, MinArgs: c.MinArgs, Protected: c.Protected}
		if c.URL != "" {
			hc := &HTTPCommand{URL: c.URL, TTL: c.TTL.Std(), Timeout: timeout, Rate: c.UpstreamRate, Burst: c.UpstreamBurst, Client: client}
			if cfg.UpstreamFailed != nil {
				hc.Log = func(err error) { cfg.UpstreamFailed(name, err) }
			}
			cmd.Run, cmd.Cached = hc.Run, hc.Cached
			r.upstreams = append(r.upstreams, hc)
		} else {
			cmd.Run, cmd.Cached = StaticReply(c.Records)
		}
		sc.Commands = append(sc.Commands, cmd)
	}
	if r.server, err = NewServer(sc); err != nil {
		return nil, err
	}
	r.free = make(chan *job, ResponderQueue)
	for range ResponderQueue {
		r.free <- new(job)
	}
	r.workers.Start(ResponderWorkers, ResponderQueue, r.answer, func(j *job) {
		r.drop(DropStopped)
		r.release(j)
	})
	return r, nil
}

// Server returns the GQP server the responder answers with.
func (r *Responder) Server() *Server { return r.server }

// Close stops the workers, then ends the upstream requests: queries
// waiting for an upstream are dropped (DropStopped), so a configuration
// reload or stop does not wait for it, and the upstream requests end with
// the configuration. In that order, so that no worker takes a request's
// end for an answer to send.
func (r *Responder) Close() {
	r.workers.Close()
	for _, c := range r.upstreams {
		c.Close()
	}
}

// Match reports whether the datagram may be a GQP query (wire/gqp's
// LooksLikeQuery).
func (r *Responder) Match(datagram []byte) bool { return wiregqp.LooksLikeQuery(datagram) }

// ServeDatagram answers the query, or queues it for a worker when it needs
// an upstream (see Responder).
func (r *Responder) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	if len(datagram) > wiregqp.MaxQuery {
		r.drop(DropTooLarge)
		return
	}
	if out, v, done := r.server.AnswerNow(src, datagram); done {
		r.count(v)
		for _, d := range out {
			w.WriteTo(d, src)
		}
		return
	}
	if !r.server.Trusted(src.Addr()) && !r.server.Authorized(src) {
		r.drop(DropUnvalidated)
		return
	}
	var j *job
	select {
	case j = <-r.free:
	default:
		r.drop(DropQueueFull)
		return
	}
	j.conn, j.src, j.n = w.Conn(), src, copy(j.query[:], datagram)
	if !r.workers.Offer(j) { // the queue has a slot for every job, so this is not expected
		r.release(j)
		r.drop(DropQueueFull)
	}
}

func (r *Responder) answer(stop context.Context, j *job) {
	ctx, cancel := context.WithTimeout(stop, r.answerBy)
	out, v := r.server.Answer(ctx, j.src, j.query[:j.n])
	cancel()
	if stop.Err() != nil {
		// Cut short by Close: the readers are gone and their socket
		// closed, so there is no one to send an answer through.
		r.drop(DropStopped)
		r.release(j)
		return
	}
	r.count(v)
	for _, d := range out {
		if err := j.conn.WriteTo(d, j.src); err != nil {
			r.drop(DropWriteFailed)
			if r.cfg.WriteFailed != nil {
				r.cfg.WriteFailed(j.src, err)
			}
		}
	}
	r.release(j)
}

// release returns j to the free list.
func (r *Responder) release(j *job) {
	j.conn = nil
	r.free <- j
}

func (r *Responder) count(v Verdict) {
	if r.cfg.Count != nil {
		r.cfg.Count(v)
	}
}

func (r *Responder) drop(d Drop) {
	if r.cfg.Dropped != nil {
		r.cfg.Dropped(d)
	}
}

var _ dgram.Protocol = (*Responder)(nil)
