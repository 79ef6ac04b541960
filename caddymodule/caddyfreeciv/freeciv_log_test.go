package caddyfreeciv

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A flood of hostile connections makes a flood of guard warnings; the
// guard's logger writes at most 10 of one message a second.
func TestFreecivGuardWarningsSampled(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := sampledLogger(zap.New(core))
	for range 1000 {
		l.Warn("freeciv guard closed a connection", zap.String("reason", "framing"))
	}
	if n := logs.Len(); n < 1 || n > 10 {
		t.Fatalf("1000 warnings in a burst wrote %d log entries, want 1 to 10", n)
	}
	// Other messages have their own allowance.
	l.Warn("something else")
	if logs.FilterMessage("something else").Len() != 1 {
		t.Fatal("a different message was dropped")
	}
}
