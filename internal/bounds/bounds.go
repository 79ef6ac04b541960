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
		return fmt.Errorf("%s must be in [%d, %d], not %d", name, lo, hi, v)
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
	lo = Lower(lo)
	if d == 0 || (d >= lo && d <= hi) {
		return nil
	}
	err := fmt.Errorf("%s must be a duration in [%s, %s], not %s", name, lo, hi, d)
	if d > 0 && d < MinDuration {
		err = fmt.Errorf("%w (a bare JSON number is nanoseconds: write \"%ds\")", err, int64(d))
	}
	return err
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
