// Package qos is gamegate's QoS echo service, free of Caddy: the engine that
// decides how to answer each QoS request (rate limits, bans, a global capacity
// budget, an optional title allow-list) and the client that runs a QoS check
// against QoS servers.
package qos

import (
	"errors"
	"fmt"
	"time"

	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/wire"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// Config is the behaviour of an Engine.
type Config struct {
	// Rate is the sustained number of requests per second one source may
	// send. Zero disables the per-source limit.
	Rate float64
	// Burst is how many requests a source may send at once before Rate
	// applies. At least 1 when Rate is set.
	Burst int
	// BanUnits is the ban announced to a source that exceeds its rate or is
	// turned away for capacity, in protocol units of 2 minutes (1-8).
	BanUnits int
	// BanDuration is how long the engine ignores a banned source.
	BanDuration time.Duration
	// BackoffUnits, when 1-7, asks a source that has spent more than half
	// of its burst to back off voluntarily for that many units. Zero never
	// asks.
	BackoffUnits int
	// Capacity is the number of requests per second the engine answers
	// across all sources. Past it, the source whose request finds the budget
	// empty is banned, so which sources are turned away is random, weighted
	// by how much each sends. Zero means no global budget.
	Capacity float64
	// CapacityBurst is how many requests beyond the steady Capacity may be
	// answered at once.
	CapacityBurst int
	// Titles, when not empty, lists the game titles answered; requests
	// with any other title are dropped.
	Titles []string
	// ProbeKey, when set, is the key of health probes (see probe.go): a
	// valid probe is answered whatever the state of its source, and
	// changes none. Default: none (probes are ordinary requests).
	ProbeKey []byte
	// Now is the wall clock probes' times are checked against. Default:
	// time.Now.
	Now func() time.Time
}

// Verdict is what the engine did with one datagram.
type Verdict uint8

// Verdicts. The Answered ones produced a response; the Dropped ones did not.
const (
	Answered             Verdict = iota // echoed with no flow control
	AnsweredBackoff                     // echoed with a voluntary back-off
	AnsweredProbe                       // a health probe, echoed with no flow control
	BannedRate                          // echoed with a ban: the source exceeded its rate
	BannedCapacity                      // echoed with a ban: the engine was over capacity
	DroppedBanned                       // the source is banned
	DroppedTitle                        // the title is not on the allow-list
	DroppedTooShort                     // malformed: shorter than a request
	DroppedTooLong                      // malformed: over 1500 bytes
	DroppedMagic                        // malformed: not 0x59
	DroppedVersion                      // malformed: version nibble not 0
	DroppedFlow                         // malformed: flow-control nibble not 0
	DroppedTitleLength                  // malformed: title length 0 or past the end
	DroppedTitleEncoding                // malformed: title not UTF-8
	NumVerdicts
)

var verdictNames = [NumVerdicts]string{
	"answered", "answered_backoff", "answered_probe", "banned_rate", "banned_capacity", "banned",
	"title_not_allowed", "too_short", "too_long", "magic", "version", "flow",
	"title_length", "title_encoding",
}

func (v Verdict) String() string {
	if v < NumVerdicts {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Answered reports whether the verdict produced a response.
func (v Verdict) Answered() bool { return v <= BannedCapacity }

// Engine answers QoS requests. It is safe for concurrent use.
type Engine struct {
	table    *SourceTable
	rate     ratelimit.Limit // per source; its state is sourceState.rate
	banFor   int64
	banFlow  wireqos.FlowControl
	backoff  wireqos.FlowControl
	capacity ratelimit.Limit // across all sources
	budget   ratelimit.AtomicState
	titles   map[string]struct{}

	prober      *prober // nil: no probe key
	probeLimit  ratelimit.Limit
	probeBudget ratelimit.AtomicState
	now         func() time.Time
}

// NewEngine returns an engine using table for per-source state. The table
// may be shared with other engines (for example across configuration
// reloads).
func NewEngine(cfg Config, table *SourceTable) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{table: table, banFor: int64(cfg.BanDuration)}
	e.banFlow, _ = wireqos.Ban(cfg.BanUnits)
	if cfg.BackoffUnits > 0 {
		e.backoff, _ = wireqos.Backoff(cfg.BackoffUnits)
	}
	// Validate has checked both pairs.
	e.rate, _ = ratelimit.NewLimit(cfg.Rate, cfg.Burst)
	e.capacity, _ = ratelimit.NewLimit(cfg.Capacity, cfg.CapacityBurst)
	if len(cfg.ProbeKey) > 0 {
		e.prober = newProber(cfg.ProbeKey)
		e.probeLimit, _ = ratelimit.NewLimit(ProbeRate, ProbeBurst)
	}
	e.now = cfg.Now
	if e.now == nil {
		e.now = time.Now
	}
	if len(cfg.Titles) > 0 {
		e.titles = make(map[string]struct{}, len(cfg.Titles))
		for _, t := range cfg.Titles {
			e.titles[t] = struct{}{}
		}
	}
	return e, nil
}

// Validate checks the configuration, naming the field at fault.
func (c *Config) Validate() error {
	if err := ratelimit.ValidateNamed("rate", "burst", c.Rate, c.Burst); err != nil {
		return err
	}
	if err := ratelimit.ValidateNamed("capacity", "capacity_burst", c.Capacity, c.CapacityBurst); err != nil {
		return err
	}
	switch {
	case c.BanUnits < 1 || c.BanUnits > 8:
		return errors.New("ban_units must be in [1, 8]")
	case c.BanDuration <= 0:
		return errors.New("ban_duration must be positive")
	case c.BackoffUnits < 0 || c.BackoffUnits > 7:
		return errors.New("backoff_units must be in [0, 7]")
	case c.BackoffUnits > 0 && c.Rate == 0:
		return errors.New("backoff_units needs a rate: back-off is signalled as a source spends its burst")
	}
	for _, t := range c.Titles {
		if len(t) > wireqos.MaxTitle {
			return fmt.Errorf("titles: %q is longer than %d bytes", t, wireqos.MaxTitle)
		}
	}
	return nil
}

// Table returns the engine's source table.
func (e *Engine) Table() *SourceTable { return e.table }

// Handle decides the fate of one datagram from src. If the verdict answers,
// the response is appended to dst and returned; it is always shorter than
// the request. Handle allocates nothing once src is tracked.
func (e *Engine) Handle(src Source, datagram []byte, dst []byte) ([]byte, Verdict) {
	var req wireqos.Request
	if err := req.Decode(datagram); err != nil {
		return nil, malformed(err)
	}
	// A health probe is answered before the title allow-list and the
	// source's state: neither may keep the health checker out.
	if e.prober != nil && len(req.Custom) == probeLen && e.prober.verify(req.Custom, e.now()) &&
		e.probeLimit.AllowAtomic(&e.probeBudget, e.table.now()) {
		return wireqos.AppendResponse(dst, wireqos.FlowNone, req.Custom), AnsweredProbe
	}
	if e.titles != nil {
		if _, ok := e.titles[string(req.Title)]; !ok {
			return nil, DroppedTitle
		}
	}
	flow, v := e.admit(src)
	if !v.Answered() {
		return nil, v
	}
	return wireqos.AppendResponse(dst, flow, req.Custom), v
}

func (e *Engine) admit(src Source) (wireqos.FlowControl, Verdict) {
	t := e.table
	sh := t.shard(src)
	now := t.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := t.lookup(sh, src)
	if s.bannedUntil > now {
		return 0, DroppedBanned
	}
	if !e.rate.Allow(&s.rate, now) {
		e.ban(s, now)
		return e.banFlow, BannedRate
	}
	if !e.capacity.AllowAtomic(&e.budget, now) {
		e.ban(s, now)
		return e.banFlow, BannedCapacity
	}
	// Past half its burst, a source is asked to slow down.
	if e.backoff != 0 && e.rate.Backlog(s.rate, now) > e.rate.Window()/2 {
		return e.backoff, AnsweredBackoff
	}
	return wireqos.FlowNone, Answered
}

// ban starts a ban; when it ends the source starts again with its whole
// burst (nothing is admitted meanwhile).
func (e *Engine) ban(s *sourceState, now int64) {
	s.bannedUntil = now + e.banFor
	s.rate = ratelimit.State{}
}

func malformed(err error) Verdict {
	switch {
	case errors.Is(err, wire.ErrMagic):
		return DroppedMagic
	case errors.Is(err, wireqos.ErrVersion):
		return DroppedVersion
	case errors.Is(err, wireqos.ErrRequestFlow):
		return DroppedFlow
	case errors.Is(err, wireqos.ErrTitleEncoding):
		return DroppedTitleEncoding
	case errors.Is(err, wire.ErrTooLong):
		return DroppedTooLong
	case errors.Is(err, wire.ErrRange):
		return DroppedTitleLength
	}
	// Both a short datagram and a title running past the end are
	// truncations; the field tells them apart. (A type assertion, not
	// errors.As: the decoder's errors are fixed values, and this path must
	// not allocate under a flood.)
	if de, ok := err.(*wire.DecodeError); ok && de.Field == "title length" {
		return DroppedTitleLength
	}
	return DroppedTooShort
}
