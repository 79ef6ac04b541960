package caddyqos

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The block is read whole before the Config's Validate runs, once, and its
// error is shown at the line of the option it is about, wherever that
// option stands in the block.
func TestQoSCaddyfileErrorAtTheOptionsLine(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"qos {\n\tclient_ipv6_prefix 48\n\tsource_key ip_port\n\trate 5\n}",
			"qos: client_ipv6_prefix applies to source_key ip: with ip_port a source is one address and port, at Testfile:2"},
		{"qos {\n\trate 5\n\tban_duration 48h\n\tburst 3\n}",
			"qos: ban_duration must be a duration in [1ms, 24h0m0s], not 48h0m0s, at Testfile:3"},
		{"qos {\n\trate 5\n\ttitles ok " + strings.Repeat("x", 300) + "\n}",
			"qos: titles must be 1 to", // at the titles line, below
		},
	} {
		err := new(QoSEcho).UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.block))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.block, err, tc.want)
		}
		if strings.Contains(tc.block, "titles") && (err == nil || !strings.HasSuffix(err.Error(), "at Testfile:3")) {
			t.Errorf("%q: got %v, want it at the titles line", tc.block, err)
		}
	}
}
