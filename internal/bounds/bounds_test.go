package bounds

import (
	"errors"
	"testing"
	"time"
)

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		v    int
		want string
	}{
		{0, ""}, {1, ""}, {5, ""}, {10, ""},
		{-1, "n must be in [1, 10], not -1"},
		{11, "n must be in [1, 10], not 11"},
	} {
		err := Int("n", tc.v, 1, 10)
		if got := errString(err); got != tc.want {
			t.Errorf("Int(%d): got %q, want %q", tc.v, got, tc.want)
		}
	}
	if err := Int[int64]("big", 1<<40, 1, 1<<41); err != nil {
		t.Errorf("int64 in range: got %v", err)
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d, lo time.Duration
		want  string
	}{
		{0, time.Second, ""},
		{time.Second, time.Second, ""},
		{time.Hour, time.Second, ""},
		{time.Second - 1, time.Second, "ttl must be a duration in [1s, 1h0m0s], not 999.999999ms"},
		{time.Hour + 1, time.Second, "ttl must be a duration in [1s, 1h0m0s], not 1h0m0.000000001s"},
		{time.Millisecond, 0, ""},
		{-1, 0, "ttl must be a duration in [1ms, 1h0m0s], not -1ns"},
		// A bare JSON number is nanoseconds: under MinDuration, whatever
		// the option's own lower bound, it is refused with a hint.
		{120, 0, `ttl must be a duration in [1ms, 1h0m0s], not 120ns (a bare JSON number is nanoseconds: write "120s")`},
		{900, time.Second, `ttl must be a duration in [1s, 1h0m0s], not 900ns (a bare JSON number is nanoseconds: write "900s")`},
		{time.Millisecond - 1, 0, `ttl must be a duration in [1ms, 1h0m0s], not 999.999µs (a bare JSON number is nanoseconds: write "999999s")`},
	} {
		err := Duration("ttl", tc.d, tc.lo, time.Hour)
		if got := errString(err); got != tc.want {
			t.Errorf("Duration(%v, lo %v): got %q, want %q", tc.d, tc.lo, got, tc.want)
		}
	}
}

func TestFirst(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if err := First(nil, a, nil, b); err != a {
		t.Errorf("got %v, want a", err)
	}
	if err := First(nil, nil); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCheckKeepsTheFirstFailure(t *testing.T) {
	var c Check
	c.Int("a", 5, 1, 10)
	c.Add(nil)
	if err := c.Err(); err != nil {
		t.Fatalf("no failure yet: got %v", err)
	}
	c.Duration("b", -1, 0, time.Second)
	c.Failf("c is wrong")
	c.Int("d", 11, 1, 10)
	if got, want := errString(c.Err()), "b must be a duration in [1ms, 1s], not -1ns"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
