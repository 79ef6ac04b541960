package gqp

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
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

// Config is the configuration of a Responder: the GQP responder's options.
// Zero values mean the defaults. The names in Validate's errors are the
// options' (JSON and Caddyfile).
type Config struct {
	// Identity is what identify answers.
	Identity Identity
	// Commands are the custom commands.
	Commands []CommandConfig
	// Logins maps login names to passwords for challenge.
	Logins map[string]string
	// AuthTTL, AuthAmplification, MaxChallengeFailures, ChallengeLockout,
	// MaxAuthorized, ClientIPv6Prefix and MaxDatagram are ServerConfig's.
	// The counts' tags name them as options, by which a Caddyfile parser
	// finds their ranges.
	AuthTTL              time.Duration
	AuthAmplification    int `json:"auth_amplification,omitempty"`
	MaxChallengeFailures int `json:"max_challenge_failures,omitempty"`
	ChallengeLockout     time.Duration
	MaxAuthorized        int `json:"max_sources,omitempty"`
	ClientIPv6Prefix     int
	MaxDatagram          int `json:"max_datagram_size,omitempty"`
	// Trusted are the networks whose sources get full answers without
	// padding. Nil: loopback; empty: none.
	Trusted []netip.Prefix
	// UpstreamTimeout bounds one upstream request. Default:
	// DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration

	// Count receives what the server did with each query it answered or
	// refused (metrics). Default: none.
	Count func(Verdict)
	// Dropped receives why a query was dropped before the server answered
	// it, or an answer datagram could not be sent (metrics). Default: none.
	Dropped func(Drop)
	// UpstreamFailed is told why a command's upstream request failed.
	// Default: none.
	UpstreamFailed func(command string, err error)
	// WriteFailed is told that an answer datagram to to could not be
	// sent, after Dropped(DropWriteFailed). Default: none.
	WriteFailed func(to netip.AddrPort, err error)
}

// CommandConfig is a custom command of a Config: static records, or
// records from an HTTP upstream (see HTTPCommand).
type CommandConfig struct {
	Name string
	// URL is fetched with GET; give URL or Records.
	URL string
	// Records are answered in order to every query.
	Records   []Pair
	Protected bool
	// MinArgs is the fewest arguments a query gives; its tag names the
	// option, by which a Caddyfile parser finds its range.
	MinArgs int `json:"min_args,omitempty"`
	// TTL, UpstreamRate and UpstreamBurst are HTTPCommand's TTL, Rate and
	// Burst.
	TTL           time.Duration
	UpstreamRate  float64
	UpstreamBurst int
}

// Validate checks a command's own options, named as the command's options
// are (min_args, ttl, upstream_rate, upstream_burst, url); zero values
// (the defaults) pass. Config.Validate names the command.
func (cmd *CommandConfig) Validate() error {
	var v bounds.Check
	v.Int("min_args", cmd.MinArgs, 0, wiregqp.MaxArgs)
	v.Duration("ttl", cmd.TTL, 0, MaxLifetime)
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
	seen := make(map[string]bool, len(c.Commands))
	for _, cmd := range c.Commands {
		switch cmd.Name {
		case "":
			v.Failf("commands: needs names, got an empty one")
		case "identify", "echo", "challenge", "validate", "extensions", PadCommand:
			v.Failf("command %s is built in", cmd.Name)
		}
		if seen[cmd.Name] {
			v.Failf("command %q is defined twice", cmd.Name)
		}
		seen[cmd.Name] = true
		switch {
		case cmd.URL != "" && len(cmd.Records) > 0:
			v.Failf("command %q: give url or records, not both", cmd.Name)
		case cmd.URL == "" && len(cmd.Records) == 0:
			v.Failf("command %q: give url or records", cmd.Name)
		}
		if err := cmd.Validate(); err != nil {
			v.Failf("command %q: %w", cmd.Name, err)
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
	v.Duration("challenge_lockout", c.ChallengeLockout, 0, MaxLifetime)
	v.Duration("auth_ttl", c.AuthTTL, 0, MaxLifetime)
	v.Duration("upstream_timeout", c.UpstreamTimeout, 0, MaxUpstreamTimeout)
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
	timeout := cfg.UpstreamTimeout
	if timeout == 0 {
		timeout = DefaultUpstreamTimeout
	}
	sc := ServerConfig{
		Identity:             cfg.Identity,
		Logins:               cfg.Logins,
		AuthTTL:              cfg.AuthTTL,
		AuthAmplification:    cfg.AuthAmplification,
		MaxChallengeFailures: cfg.MaxChallengeFailures,
		ChallengeLockout:     cfg.ChallengeLockout,
		MaxAuthorized:        cfg.MaxAuthorized,
		ClientIPv6Prefix:     cfg.ClientIPv6Prefix,
		MaxDatagram:          cfg.MaxDatagram,
		Trusted:              cfg.Trusted,
	}
	r := &Responder{cfg: cfg, answerBy: timeout + time.Second}
	client := &http.Client{Timeout: timeout}
	for _, c := range cfg.Commands {
		cmd := Command{Name: c.Name, MinArgs: c.MinArgs, Protected: c.Protected}
		if c.URL != "" {
			hc := &HTTPCommand{URL: c.URL, TTL: c.TTL, Timeout: timeout, Rate: c.UpstreamRate, Burst: c.UpstreamBurst, Client: client}
			if cfg.UpstreamFailed != nil {
				name := c.Name
				hc.Log = func(err error) { cfg.UpstreamFailed(name, err) }
			}
			cmd.Run, cmd.Cached = hc.Run, hc.Cached
			r.upstreams = append(r.upstreams, hc)
		} else {
			cmd.Run, cmd.Cached = StaticReply(c.Records)
		}
		sc.Commands = append(sc.Commands, cmd)
	}
	var err error
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
