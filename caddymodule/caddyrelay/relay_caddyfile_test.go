package caddyrelay

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The block is read whole before Validate runs, once, and its error is
// shown at the line of the option it is about, or of the block when it
// names no option given.
func TestRelayCaddyfileErrorAtTheOptionsLine(t *testing.T) {
	const api = "relay_allocations {\n\tsecrets 0123456789abcdef0123456789abcdef\n\tpublic_address 203.0.113.7:7777\n"
	for _, tc := range []struct {
		block string
		m     caddyfile.Unmarshaler
		want  string
	}{
		{"relay {\n\tidle_timeout 48h\n\tmax_bindings 10\n}", new(Relay),
			"relay: idle_timeout must be a duration in [1ms, 24h0m0s], not 48h0m0s, at Testfile:2"},
		{api + "\tmax_allocations_per_client 20\n\ttokens t\n\tmax_allocations 10\n}", new(RelayAllocations),
			"max_allocations_per_client must be in [1, max_allocations (10)], not 20, at Testfile:4"},
		{api + "\tinsecure_no_auth\n\ttokens t\n}", new(RelayAllocations),
			"insecure_no_auth cannot be combined with tokens, at Testfile:4"},
		{api + "}", new(RelayAllocations),
			"tokens: at least one token is required, or set insecure_no_auth to let anyone who reaches the API allocate on the relay, at Testfile:1"},
	} {
		err := tc.m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.block))
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error ending %q", tc.block, err, tc.want)
		}
	}
}
