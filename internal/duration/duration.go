// Package duration is a configuration duration free of Caddy: the type the
// handlers' Configs use for JSON, read as caddy.Duration reads it, so that
// a module embedding such a Config loads the same JSON as one of Caddy's
// own fields would.
package duration

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration in JSON: a number of nanoseconds, or a
// string such as "500ms", "1h30m" or "2d" (a day is 24h). It encodes as a
// number of nanoseconds, as Caddy's adapters write durations.
type Duration time.Duration

// maxText is the longest duration string read (caddy.ParseDuration's).
const maxText = 1024

// UnmarshalJSON reads a number of nanoseconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v time.Duration
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		var err error
		if v, err = Parse(s); err != nil {
			return err
		}
	} else if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// Parse parses a duration as time.ParseDuration does, with "d" for days of
// 24 hours as well (so "1.5d" is 36h), as caddy.ParseDuration does.
func Parse(s string) (time.Duration, error) {
	if len(s) > maxText {
		return 0, errors.New("parsing duration: input string too long")
	}
	var out strings.Builder
	done := 0 // s[:done] is written to out
	for i := 0; i < len(s); i++ {
		if s[i] != 'd' {
			continue
		}
		start := i
		for start > done && isNumber(s[start-1]) {
			start--
		}
		days, err := strconv.ParseFloat(s[start:i], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing duration %q: days are not a number", s)
		}
		out.WriteString(s[done:start])
		out.WriteString(strconv.FormatFloat(days*24, 'f', -1, 64))
		out.WriteByte('h')
		done = i + 1
	}
	if done == 0 {
		return time.ParseDuration(s)
	}
	out.WriteString(s[done:])
	return time.ParseDuration(out.String())
}

func isNumber(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' }
