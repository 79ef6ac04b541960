package caddya2s

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/internal/duration"
)

// The shield's former option names still configure it: stale_ttl sets
// both stale_while_revalidate and stale_if_error (it was both), and
// upstream_timeout sets attempt_timeout, with one warning each; giving a
// former name beside a current one is an error naming both.
func TestA2SShieldFormerNames(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	h := &A2SShield{ShieldOptions: a2s.ShieldOptions{Upstream: "127.0.0.1:27015"}, StaleTTL: duration.Duration(20 * time.Second), UpstreamTimeout: duration.Duration(800 * time.Millisecond)}
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Cleanup()
	if h.StaleWhileRevalidate.Std() != 20*time.Second || h.StaleIfError.Std() != 20*time.Second || h.StaleTTL != 0 {
		t.Errorf("stale_ttl 20s: got stale_while_revalidate %v, stale_if_error %v, stale_ttl %v; want 20s, 20s, 0",
			h.StaleWhileRevalidate, h.StaleIfError, h.StaleTTL)
	}
	if h.AttemptTimeout.Std() != 800*time.Millisecond || h.UpstreamTimeout != 0 {
		t.Errorf("upstream_timeout 800ms: got attempt_timeout %v, upstream_timeout %v", h.AttemptTimeout, h.UpstreamTimeout)
	}
	if err := h.Validate(); err != nil {
		t.Errorf("Validate after the move: %v", err)
	}

	for _, tc := range []struct {
		name string
		h    *A2SShield
		want string
	}{
		{"stale_ttl and stale_if_error", &A2SShield{ShieldOptions: a2s.ShieldOptions{Upstream: "127.0.0.1:27015", StaleIfError: 1}, StaleTTL: 1}, "stale_ttl is the former name of stale_if_error: give only stale_if_error"},
		{"stale_ttl and stale_while_revalidate", &A2SShield{ShieldOptions: a2s.ShieldOptions{Upstream: "127.0.0.1:27015", StaleWhileRevalidate: 1}, StaleTTL: 1}, "stale_ttl is the former name of stale_while_revalidate"},
		{"upstream_timeout and attempt_timeout", &A2SShield{ShieldOptions: a2s.ShieldOptions{Upstream: "127.0.0.1:27015", AttemptTimeout: 1}, UpstreamTimeout: 1}, "upstream_timeout is the former name of attempt_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.h.Provision(ctx)
			tc.h.Cleanup()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error starting %q", err, tc.want)
			}
		})
	}
}

// split_layout, an option of the shield's own options, loads from JSON
// under its name and is checked by the shield's Validate: a layout it
// does not know is refused, not served as auto.
func TestA2SShieldSplitLayoutJSON(t *testing.T) {
	for _, tc := range []struct{ layout, wantErr string }{
		{"goldsrc", ""},
		{"sideways", `split_layout: want auto, source, source_no_size or goldsrc, got "sideways"`},
	} {
		var h A2SShield
		if err := caddy.StrictUnmarshalJSON([]byte(`{"upstream": "127.0.0.1:27015", "split_layout": "`+tc.layout+`"}`), &h); err != nil {
			t.Fatalf("%s: %v", tc.layout, err)
		}
		if h.SplitLayout != tc.layout {
			t.Errorf("%s: got split_layout %q", tc.layout, h.SplitLayout)
		}
		err := h.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
			t.Errorf("%s: Validate got %v, want %q", tc.layout, err, tc.wantErr)
		}
	}
}
