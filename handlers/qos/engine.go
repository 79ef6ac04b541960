// Package qos is gamegate's QoS echo service, free of Caddy: the engine that
// decides how to answer each QoS request (rate limits, bans, a global capacity
// budget, an optional title allow-list) and the client that runs a QoS check
// against QoS servers.
package qos

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

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
}

// Verdict is what the engine did with one datagram.
type Verdict uint8

// Verdicts. The Answered ones produced a response; the Dropped ones did not.
const (
	Answered             Verdict = iota // echoed with no flow control
	AnsweredBackoff                     // echoed with a voluntary back-off
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
	"answered", "answered_backoff", "banned_rate", "banned_capacity", "banned",
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
	table     *SourceTable
	emission  int64 // nanoseconds of rate one request costs
	tolerance int64 // how far ahead of now a source's tat may run
	banFor    int64
	banFlow   wireqos.FlowControl
	backoff   wireqos.FlowControl
	capacity  *budget
	titles    map[string]struct{}
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
	if cfg.Rate > 0 {
		e.emission = int64(math.Ceil(float64(time.Second) / cfg.Rate))
		e.tolerance = e.emission * int64(cfg.Burst)
	}
	if cfg.Capacity > 0 {
		emission := int64(math.Ceil(float64(time.Second) / cfg.Capacity))
		e.capacity = &budget{emission: emission, tolerance: emission * int64(cfg.CapacityBurst)}
		e.capacity.tat.Store(table.now())
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
	switch {
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return errors.New("rate must be a finite number ≥ 0")
	case c.Rate > 0 && c.Burst < 1:
		return errors.New("burst must be ≥ 1 when rate is set")
	case c.BanUnits < 1 || c.BanUnits > 8:
		return errors.New("ban_units must be in [1, 8]")
	case c.BanDuration <= 0:
		return errors.New("ban_duration must be positive")
	case c.BackoffUnits < 0 || c.BackoffUnits > 7:
		return errors.New("backoff_units must be in [0, 7]")
	case c.BackoffUnits > 0 && c.Rate == 0:
		return errors.New("backoff_units needs a rate: back-off is signalled as a source spends its burst")
	case c.Capacity < 0 || math.IsNaN(c.Capacity) || math.IsInf(c.Capacity, 0):
		return errors.New("capacity must be a finite number ≥ 0")
	case c.Capacity > 0 && c.CapacityBurst < 1:
		return errors.New("capacity_burst must be ≥ 1 when capacity is set")
	}
	if c.Rate > 0 && !RateFits(c.Rate, c.Burst) {
		return errors.New("rate and burst out of range: the burst must span less than 100 years at the rate, and the rate be at least one per 100 years")
	}
	if c.Capacity > 0 && !RateFits(c.Capacity, c.CapacityBurst) {
		return errors.New("capacity and capacity_burst out of range: the burst must span less than 100 years at the capacity")
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
	s := t.lookup(sh, src, now)
	if s.bannedUntil > now {
		return 0, DroppedBanned
	}
	var ahead int64
	if e.emission > 0 {
		tat := max(s.tat, now) + e.emission
		if tat-now > e.tolerance {
			e.ban(s, now)
			return e.banFlow, BannedRate
		}
		s.tat = tat
		ahead = tat - now
	}
	if e.capacity != nil && !e.capacity.take(now) {
		e.ban(s, now)
		return e.banFlow, BannedCapacity
	}
	if e.backoff != 0 && ahead > e.tolerance/2 {
		return e.backoff, AnsweredBackoff
	}
	return wireqos.FlowNone, Answered
}

// ban starts a ban; when it ends the source starts again with a full bucket.
func (e *Engine) ban(s *sourceState, now int64) {
	s.bannedUntil = now + e.banFor
	s.tat = s.bannedUntil
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

// RateFits reports whether a rate (per second) and a burst can be kept in
// nanosecond arithmetic without overflow: the interval between events and
// the whole burst both within 100 years.
func RateFits(rate float64, burst int) bool {
	const century = float64(100 * 365 * 24 * time.Hour)
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) || burst < 1 {
		return false
	}
	emission := math.Ceil(float64(time.Second) / rate)
	return emission <= century && emission*float64(burst) <= century
}

// budget is a lock-free generic-cell-rate limiter shared by all sources.
type budget struct {
	tat       atomic.Int64
	emission  int64
	tolerance int64
}

func (b *budget) take(now int64) bool {
	for {
		old := b.tat.Load()
		tat := max(old, now) + b.emission
		if tat-now > b.tolerance {
			return false
		}
		if b.tat.CompareAndSwap(old, tat) {
			return true
		}
	}
}
