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

// Duration checks an optional duration: zero, or in [lo, hi]. With lo 0
// it refuses only negative durations and those over hi.
func Duration(name string, d, lo, hi time.Duration) error {
	if d != 0 && (d < lo || d > hi) {
		return &RangeError{Name: name, Lo: int64(lo), Hi: int64(hi), Value: int64(d), Duration: true}
	}
	return nil
}

// RangeError is an option outside its range: what Int and Duration
// return, so that a Caddyfile parser can say the range at the option's
// line in its own words without stating the range again.
type RangeError struct {
	Name     string // the option, as JSON and the Caddyfile name it
	Lo, Hi   int64  // its range, bounds included (nanoseconds for a duration)
	Value    int64  // the value given
	Duration bool   // whether the option is a duration
}

func (e *RangeError) Error() string {
	if e.Duration {
		return fmt.Sprintf("%s must be a duration in [%s, %s], not %s", e.Name,
			time.Duration(e.Lo), time.Duration(e.Hi), time.Duration(e.Value))
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
