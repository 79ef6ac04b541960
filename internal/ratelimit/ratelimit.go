// Package ratelimit is gamegate's one rate limiter: the generic cell rate
// algorithm (GCRA) in integer nanoseconds, with the clock injected.
//
// A Limit holds a rate and a burst, compiled once. The state it acts on is a
// single theoretical arrival time (TAT): the moment by which the events
// admitted so far would have been paid for at the rate. An event is admitted
// while admitting it keeps the TAT within one burst's worth of time ahead of
// now. So a limiter costs eight bytes per key and a few integer operations per
// event, and allocates nothing:
//
//   - State is the plain value, for state kept under someone else's lock (a
//     bounded, sharded table of sources);
//   - AtomicState is the same value updated lock-free, for state shared by
//     goroutines (a budget, a per-key map of pointers);
//   - Limiter is a Limit, a Clock and an AtomicState: a ready-made single
//     limiter.
//
// Times ("now") are int64 nanoseconds read from a Clock, which counts from
// its own creation with the monotonic clock, so a step of the wall clock
// neither frees nor blocks anyone; they are never negative.
//
// Rounding: the interval between events is 1s/rate rounded up to a whole
// nanosecond. A limiter therefore never admits more than burst + rate×t
// events in any span of time t; at rates up to a million per second the
// interval is exact or within 0.1% of it.
package ratelimit

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
)

// MaxSpan bounds both the interval between events (1/rate) and the time a
// whole burst takes (burst/rate). With times ("now") between 0 and MaxSpan,
// which a Clock gives for 90 years after its creation, no sum of times a
// limiter forms can overflow an int64 of nanoseconds (about 292 years).
const MaxSpan = 90 * 365 * 24 * time.Hour

// MaxBurst is the largest burst a configuration may give (and the largest
// DefaultBurst): a billion events at once is already no limit.
const MaxBurst = 1 << 30

// DefaultBurst is the burst of a limit whose burst is not configured: one
// second of events at rate, rounded up to a whole event, at least 1 and at
// most MaxBurst. So a rate of 10 per second allows 10 at once, 2.5 allows
// 3, and 0.2 allows 1. A rate that is not positive (0, negative, NaN)
// gives 1.
func DefaultBurst(rate float64) int {
	switch {
	case !(rate > 1):
		return 1
	case rate >= MaxBurst:
		return MaxBurst
	}
	return int(math.Ceil(rate))
}

// Validate checks a rate (events per second) and a burst (events at once).
// A rate of 0 turns limiting off, and the burst is then ignored; otherwise
// the rate must be finite and positive, the burst at least 1, and both 1/rate
// and burst/rate within MaxSpan. The errors name the values at fault, as
// "rate" and "burst": ValidateNamed uses a module's own field names.
func Validate(rate float64, burst int) error { return ValidateNamed("rate", "burst", rate, burst) }

// ValidateNamed is Validate with the names of the rate and burst fields
// given, for error messages such as "capacity_burst 0: must be at least 1
// when capacity is set".
func ValidateNamed(rateName, burstName string, rate float64, burst int) error {
	switch {
	case math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0:
		return fmt.Errorf("%s %v per second: must be a finite number ≥ 0 (0 turns the limit off)", rateName, rate)
	case rate == 0:
		return nil
	case burst < 1:
		return fmt.Errorf("%s %d: must be at least 1 when %s is set", burstName, burst, rateName)
	}
	interval := math.Ceil(float64(time.Second) / rate)
	if interval > float64(MaxSpan) {
		return fmt.Errorf("%s %v per second: must be at least one per 90 years", rateName, rate)
	}
	if interval*float64(burst) > float64(MaxSpan) {
		return fmt.Errorf("%s %d at %s %v per second: must refill within 90 years", burstName, burst, rateName, rate)
	}
	return nil
}

// ValidateOptions checks a rate limit configured as two options, each 0
// for its default: rateName, events per second, and burstName, events at
// once in [1, maxBurst].
func ValidateOptions(rateName, burstName string, rate float64, burst, maxBurst int) error {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("%s must be a positive number, not %v", rateName, rate)
	}
	// A *bounds.RangeError, so that a parser can read the burst's range.
	if err := bounds.Int(burstName, burst, 1, maxBurst); err != nil {
		return err
	}
	return ValidateNamed(rateName, burstName, rate, max(burst, 1))
}

// Limit is a rate and a burst compiled to nanoseconds. The zero Limit admits
// everything. A Limit is a small value: copy it freely.
type Limit struct {
	interval  int64 // nanoseconds one event costs: ⌈1s / rate⌉
	tolerance int64 // how far ahead of now the TAT may run: interval × burst
}

// NewLimit compiles rate (events per second) and burst (events at once). A
// rate of 0 gives the zero Limit, which admits everything. The values are
// checked with Validate.
func NewLimit(rate float64, burst int) (Limit, error) {
	if err := Validate(rate, burst); err != nil {
		return Limit{}, err
	}
	if rate == 0 {
		return Limit{}, nil
	}
	interval := int64(math.Ceil(float64(time.Second) / rate))
	return Limit{interval: interval, tolerance: interval * int64(burst)}, nil
}

// Unlimited reports whether l admits everything.
func (l Limit) Unlimited() bool { return l.interval == 0 }

// Interval is the time one event costs: 1/rate, rounded up to a nanosecond.
func (l Limit) Interval() time.Duration { return time.Duration(l.interval) }

// Window is the time a whole burst takes to refill: burst × Interval.
func (l Limit) Window() time.Duration { return time.Duration(l.tolerance) }

// State is the limiter state of one key: its theoretical arrival time, in
// the nanoseconds of the caller's Clock. The zero State has its whole burst
// available. It is not safe for concurrent use: keep it
// under a lock, or use AtomicState.
type State struct{ tat int64 }

// Idle reports whether s has its whole burst available at now: forgetting it
// changes nothing.
func (s State) Idle(now int64) bool { return s.tat <= now }

// next is the TAT after admitting one more event at now, and whether that
// event is admitted.
func (l Limit) next(tat, now int64) (int64, bool) {
	t := max(tat, now) + l.interval
	return t, t-now <= l.tolerance
}

// Allow admits one event at now and records it in s, or refuses it and
// leaves s unchanged.
func (l Limit) Allow(s *State, now int64) bool {
	if l.interval == 0 {
		return true
	}
	t, ok := l.next(s.tat, now)
	if ok {
		s.tat = t
	}
	return ok
}

// TakeN returns s after n events at once at now (n ≥ 1), and whether they
// are admitted: while their cost fits in the burst, as n single events
// would be; and, when n events cost more than the whole burst, only while
// s is idle (its whole burst available), running s ahead of now by their
// whole cost. So a message larger than the burst (an answer of n bytes)
// still goes out when nothing else has, and its excess is paid before the
// next: the limit never admits more than max(burst, n) + rate×t in any
// span t. TakeN leaves s to the caller, who may check several limits
// before committing to any.
func (l Limit) TakeN(s State, now, n int64) (State, bool) {
	if l.interval == 0 {
		return s, true
	}
	// A cost above MaxSpan is refused past an idle state like any other;
	// capping it keeps max(tat, now) + cost within an int64.
	cost := min(max(n, 1), int64(MaxSpan)/l.interval) * l.interval
	t := max(s.tat, now) + cost
	if t-now <= l.tolerance || (cost > l.tolerance && s.tat <= now) {
		return State{t}, true
	}
	return s, false
}

// AllowNAtomic is TakeN on a shared state, recording the events if
// admitted.
func (l Limit) AllowNAtomic(s *AtomicState, now, n int64) bool {
	if l.interval == 0 {
		return true
	}
	for {
		old := s.tat.Load()
		t, ok := l.TakeN(State{old}, now, n)
		if !ok {
			return false
		}
		if s.tat.CompareAndSwap(old, t.tat) {
			return true
		}
	}
}

// Backlog is how far s runs ahead of now: how long until its whole burst is
// available again. It is 0 for an idle state and at most Window after an
// admitted event.
func (l Limit) Backlog(s State, now int64) time.Duration {
	return time.Duration(max(s.tat-now, 0))
}

// Wait is how long from now until s would admit one more event: 0 if it
// would now. HTTP handlers send it, rounded up to seconds (RetryAfter), in a
// Retry-After header.
func (l Limit) Wait(s State, now int64) time.Duration {
	if l.interval == 0 {
		return 0
	}
	return time.Duration(max(s.tat+l.interval-l.tolerance-now, 0))
}

// AtomicState is a State that goroutines may share: Allow updates it
// lock-free. The zero value has its whole burst available.
type AtomicState struct{ tat atomic.Int64 }

// Load returns the state's current value.
func (s *AtomicState) Load() State { return State{s.tat.Load()} }

// AllowAtomic is Allow on a shared state.
func (l Limit) AllowAtomic(s *AtomicState, now int64) bool {
	if l.interval == 0 {
		return true
	}
	for {
		old := s.tat.Load()
		t, ok := l.next(old, now)
		if !ok {
			return false
		}
		if s.tat.CompareAndSwap(old, t) {
			return true
		}
	}
}

// Clock reads nanoseconds since its creation from a time source. The zero
// Clock reads the monotonic clock since the process started.
type Clock struct {
	now   func() time.Time
	epoch time.Time
}

// NewClock returns a clock counting from now() at the time of the call; nil
// means the monotonic clock. Inject a manual time source in tests.
func NewClock(now func() time.Time) Clock {
	if now == nil {
		return Clock{epoch: time.Now()}
	}
	return Clock{now: now, epoch: now()}
}

// Now is the time in nanoseconds since the clock's creation. It is never
// negative: a time source that goes back before the creation reads as 0.
//
// Without a time source it reads only the monotonic clock (time.Since of a
// monotonic epoch), not the wall clock as well as time.Now does: rate
// limits read it once per datagram, and on virtual machines each clock
// read costs tens of nanoseconds or more.
func (c Clock) Now() int64 {
	if c.now == nil {
		epoch := c.epoch
		if epoch.IsZero() {
			epoch = processStart
		}
		return int64(time.Since(epoch))
	}
	return max(int64(c.now().Sub(c.epoch)), 0)
}

var processStart = time.Now()

// Limiter is one rate limit with its own state and clock, safe for
// concurrent use. Construct it with NewLimiter.
type Limiter struct {
	limit Limit
	clock Clock
	state AtomicState
}

// NewLimiter returns a limiter for rate events per second, burst at once,
// with time read from now (nil means time.Now). A rate of 0 admits
// everything. The values are checked with Validate.
func NewLimiter(rate float64, burst int, now func() time.Time) (*Limiter, error) {
	l, err := NewLimit(rate, burst)
	if err != nil {
		return nil, err
	}
	return &Limiter{limit: l, clock: NewClock(now)}, nil
}

// Allow admits one event now, or refuses it.
func (l *Limiter) Allow() bool {
	if l.limit.interval == 0 {
		return true
	}
	return l.limit.AllowAtomic(&l.state, l.clock.Now())
}

// Wait is how long from now until Allow would admit an event.
func (l *Limiter) Wait() time.Duration { return l.limit.Wait(l.state.Load(), l.clock.Now()) }

// Limit returns the limiter's compiled limit.
func (l *Limiter) Limit() Limit { return l.limit }

// RetryAfter is d in whole seconds rounded up, at least 1: the value of an
// HTTP Retry-After header telling a client to come back after d.
func RetryAfter(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return max(1, s)
}
