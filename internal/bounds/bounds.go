// Package bounds checks configuration options against their ranges for
// the handlers' Validate methods: zero is an option's default and always
// passes, and an error names the option as the user writes it (JSON and
// Caddyfile alike), its range and the value given.
package bounds

import (
	"fmt"
	"time"
)

// Int checks an optional count: zero, or in [lo, hi].
func Int[T ~int | ~int64](name string, v, lo, hi T) error {
	if v != 0 && (v < lo || v > hi) {
		return &RangeError{Name: name, Lo: int64(lo), Hi: int64(hi), Value: int64(v)}
	}
	return nil
}

// MinDuration is the shortest duration any option takes, whatever its own
// lower bound. JSON reads a bare number as nanoseconds (caddy.Duration),
// so "ban_duration": 120 means 120ns, not two minutes; no option of
// gamegate means anything useful under a millisecond, so a shorter
// duration is refused as the mistake it surely is, with the value the
// user meant in seconds as a hint.
const MinDuration = time.Millisecond

// Lower returns the lower bound Duration applies for lo: lo, or
// MinDuration when lo is shorter.
func Lower(lo time.Duration) time.Duration { return max(lo, MinDuration) }

// Duration checks an optional duration: zero, or in [Lower(lo), hi]. A
// positive duration under MinDuration, most likely a bare JSON number,
// gets a hint to write it with a unit.
func Duration(name string, d, lo, hi time.Duration) error {
	raised := lo < MinDuration
	lo = Lower(lo)
	if d == 0 || (d >= lo && d <= hi) {
		return nil
	}
	return &RangeError{Name: name, Lo: int64(lo), Hi: int64(hi), Value: int64(d), Duration: true, Raised: raised}
}

// RangeError is an option outside its range: what Int and Duration
// return, so that a Caddyfile parser can say the range at the option's
// line in its own words without stating the range again.
type RangeError struct {
	Name     string // the option, as JSON and the Caddyfile name it
	Lo, Hi   int64  // its range, bounds included (nanoseconds for a duration)
	Value    int64  // the value given
	Duration bool   // whether the option is a duration
	// Raised says that Lo is MinDuration because the option's own lower
	// bound was less (a duration option without a lower bound of its own).
	Raised bool
}

func (e *RangeError) Error() string {
	if e.Duration {
		msg := fmt.Sprintf("%s must be a duration in [%s, %s], not %s", e.Name,
			time.Duration(e.Lo), time.Duration(e.Hi), time.Duration(e.Value))
		if e.Value > 0 && e.Value < int64(MinDuration) {
			// A bare JSON number is nanoseconds.
			msg += fmt.Sprintf(" (a bare JSON number is nanoseconds: write \"%ds\")", e.Value)
		}
		return msg
	}
	return fmt.Sprintf("%s must be in [%d, %d], not %d", e.Name, e.Lo, e.Hi, e.Value)
}

// First returns the first error of errs that is not nil: the checks of a
// Validate written as one list.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Check collects the checks of a Validate that goes on past a failure
// (to keep its code one list); Err returns the first failure. The zero
// Check is ready to use.
type Check struct{ err error }

// Add records err, unless it is nil or an earlier failure was recorded.
func (c *Check) Add(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Failf records a failure of the caller's own.
func (c *Check) Failf(format string, args ...any) { c.Add(fmt.Errorf(format, args...)) }

// Int is Int's check, recorded.
func (c *Check) Int(name string, v, lo, hi int) { c.Add(Int(name, v, lo, hi)) }

// Duration is Duration's check, recorded.
func (c *Check) Duration(name string, d, lo, hi time.Duration) { c.Add(Duration(name, d, lo, hi)) }

// Err returns the first failure recorded, or nil.
func (c *Check) Err() error { return c.err }
