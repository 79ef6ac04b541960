package a2s

import (
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
)

// At the longest attempt_timeout and retries Validate accepts, the wait
// for an answer (every attempt and a second) is positive; past the bounds
// Validate refuses the option by name, before any wait could overflow to
// a negative duration.
func TestShieldWaitsAtTheBound(t *testing.T) {
	p, err := NewShieldProtocol(ShieldOptions{Upstream: "127.0.0.1:27015", AttemptTimeout: duration.Duration(MaxAttemptTimeout), Retries: MaxRetries})
	if err != nil {
		t.Fatalf("attempt_timeout %v, retries %d: %v", MaxAttemptTimeout, MaxRetries, err)
	}
	defer p.Close()
	if got, want := p.loadBy, (MaxRetries+1)*MaxAttemptTimeout+time.Second; got != want {
		t.Errorf("wait for an answer: got %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name  string
		opts  ShieldOptions
		field string
	}{
		{"attempt_timeout far past", ShieldOptions{AttemptTimeout: duration.Duration(1_000_000 * time.Hour), Retries: 2}, "attempt_timeout"},
		{"attempt_timeout one past", ShieldOptions{AttemptTimeout: duration.Duration(MaxAttemptTimeout + 1)}, "attempt_timeout"},
		{"ttl", ShieldOptions{TTL: duration.Duration(MaxLifetime + 1)}, "ttl"},
		{"stale_while_revalidate", ShieldOptions{StaleWhileRevalidate: duration.Duration(MaxLifetime + 1)}, "stale_while_revalidate"},
		{"stale_if_error", ShieldOptions{StaleIfError: -1}, "stale_if_error"},
		{"negative_ttl", ShieldOptions{NegativeTTL: -1}, "negative_ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Upstream = "127.0.0.1:27015"
			err := tc.opts.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+" must be a duration in [") {
				t.Fatalf("got %v, want an error naming %s and its range", err, tc.field)
			}
		})
	}
}
