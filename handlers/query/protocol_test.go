package query

import (
	"testing"
	"time"
)

func TestNowUsesTheGivenClockElseTheSystems(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := Now(func() time.Time { return at }); !got.Equal(at) {
		t.Errorf("with a clock: got %v, want %v", got, at)
	}
	before := time.Now()
	if got := Now(nil); got.Before(before) || got.After(time.Now()) {
		t.Errorf("without a clock: got %v, want the system's time (after %v)", got, before)
	}
}
