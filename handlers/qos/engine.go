// Package qos is gamegate's QoS echo service, free of Caddy: the engine that
// decides how to answer each QoS request (rate limits, bans, a global capacity
// budget, an optional title allow-list) and the client that runs a QoS check
// against QoS servers.
package qos

import (
	"errors"
	"time"

	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/wire"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

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
// reloads). cfg's zero fields take their defaults; cfg should have passed
// Validate, which NewEngine does not repeat: out-of-range values do not
// make it panic, but do not make a useful engine either.
func NewEngine(cfg Config, table *SourceTable) (*Engine, error) {
	cfg = cfg.WithDefaults()
	e := &Engine{table: table, banFor: int64(cfg.BanDuration)}
	e.banFlow, _ = wireqos.Ban(min(max(cfg.BanUnits, 1), 8))
	if cfg.BackoffUnits > 0 {
		e.backoff, _ = wireqos.Backoff(min(cfg.BackoffUnits, 7))
	}
	var err error
	if e.rate, err = ratelimit.NewLimit(cfg.Rate, cfg.Burst); err != nil {
		return nil, err
	}
	if e.capacity, err = ratelimit.NewLimit(cfg.Capacity, cfg.CapacityBurst); err != nil {
		return nil, err
	}
	if len(cfg.ProbeKey) > 0 {
		e.prober = newProber(cfg.ProbeKey)
		e.probeLimit, _ = ratelimit.NewLimit(ProbeRate, ProbeBurst)
	}
	e.now = cfg.Now
	if len(cfg.Titles) > 0 {
		e.titles = make(map[string]struct{}, len(cfg.Titles))
		for _, t := range cfg.Titles {
			e.titles[t] = struct{}{}
		}
	}
	return e, nil
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
