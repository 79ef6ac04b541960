package caddyrelay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// Configurations that adapt but must not run: Validate (and so Provision,
// which calls it first) names the option at fault.
func TestRelayAllocationsRegionJSON(t *testing.T) {
	var h RelayAllocations
	if err := json.Unmarshal([]byte(`{"regions": ["eu-west", {"id": "us-east", "description": "US East"}, {"id": "ap"}]}`), &h); err != nil {
		t.Fatal(err)
	}
	want := []RelayAllocationsRegion{{ID: "eu-west"}, {ID: "us-east", Description: "US East"}, {ID: "ap"}}
	if len(h.Regions) != len(want) {
		t.Fatalf("got %+v, want %+v", h.Regions, want)
	}
	for i := range want {
		if h.Regions[i] != want[i] {
			t.Fatalf("region %d: got %+v, want %+v", i, h.Regions[i], want[i])
		}
	}
	for _, bad := range []string{`{"regions": [7]}`, `{"regions": [{"id": "eu", "name": "Europe"}]}`} {
		if err := json.Unmarshal([]byte(bad), &h); err == nil {
			t.Fatalf("%s: got nil error", bad)
		}
	}
}

func TestRelayAllocationsValidate(t *testing.T) {
	const base = `"secrets": ["0123456789abcdef"], "tokens": ["t"], "public_address": "203.0.113.7:7777"`
	tests := []struct {
		name string
		json string
		want string // "" for a valid configuration
	}{
		{"valid", `{` + base + `}`, ""},
		{"valid without auth", `{"secrets": ["0123456789abcdef"], "insecure_no_auth": true, "public_address": "relay.example.com:7777"}`, ""},
		{"valid with regions", `{` + base + `, "regions": ["eu-west", {"id": "us-east", "description": "US East"}]}`, ""},
		{"valid with placeholder address", `{"secrets": ["s"], "tokens": ["t"], "public_address": "{env.RELAY_ADDR}"}`, ""},
		{"missing secrets", `{"tokens": ["t"], "public_address": "203.0.113.7:7777"}`, "secrets: at least one secret is required"},
		{"missing public_address", `{"secrets": ["0123456789abcdef"], "tokens": ["t"]}`, "public_address is required"},
		{"no tokens", `{"secrets": ["0123456789abcdef"], "public_address": "203.0.113.7:7777"}`, "tokens: at least one token is required, or set insecure_no_auth"},
		{"tokens and insecure_no_auth", `{` + base + `, "insecure_no_auth": true}`, "insecure_no_auth cannot be combined with tokens"},
		{"bad public_address", `{"secrets": ["s"], "tokens": ["t"], "public_address": "203.0.113.7"}`, "public_address: \"203.0.113.7\": want host:port"},
		{"public_address port", `{"secrets": ["s"], "tokens": ["t"], "public_address": "relay:0"}`, "public_address: \"relay:0\": port"},
		{"max_connections", `{` + base + `, "max_connections": 70000}`, "max_connections must be in [1, 65535], not 70000"},
		{"allocation_ttl", `{` + base + `, "allocation_ttl": -1}`, "allocation_ttl must not be negative"},
		{"join_code_ttl", `{` + base + `, "join_code_ttl": -1}`, "join_code_ttl must not be negative"},
		{"max_allocations", `{` + base + `, "max_allocations": 2000000}`, "max_allocations must be in [1, 1000000]"},
		{"max_body", `{` + base + `, "max_body": 17000000}`, "max_body must be in [1, 16777216], not 17000000"},
		{"valid abuse limits", `{` + base + `, "join_rate": 0.5, "join_burst": 3, "allocate_rate": 2, "allocate_burst": 20, "join_code_rate": 5, "join_code_burst": 5, "max_allocations_per_client": 7, "max_clients": 1000, "any_client_join_code": true}`, ""},
		{"join_rate negative", `{` + base + `, "join_rate": -1}`, "join_rate must be a positive number, not -1"},
		{"allocate_burst negative", `{` + base + `, "allocate_burst": -2}`, "allocate_burst must be in [1, 1073741824], not -2"},
		{"join_code_rate too slow for its burst", `{` + base + `, "join_code_rate": 1e-9, "join_code_burst": 1000}`, "join_code_burst 1000 at join_code_rate 1e-09 per second: must refill"},
		{"max_allocations_per_client negative", `{` + base + `, "max_allocations_per_client": -1}`, "max_allocations_per_client must be in [1, max_allocations (10000)], not -1"},
		{"max_allocations_per_client above max_allocations", `{` + base + `, "max_allocations": 10, "max_allocations_per_client": 11}`, "max_allocations_per_client must be in [1, max_allocations (10)], not 11"},
		{"max_clients", `{` + base + `, "max_clients": 5}`, "max_clients must be in [16, 1000000], not 5"},
		{"region id", `{` + base + `, "regions": [{"id": "eu west"}]}`, "regions: region ID \"eu west\""},
		{"region missing id", `{` + base + `, "regions": [{"description": "Europe"}]}`, "regions: region ID \"\""},
		{"duplicate region", `{` + base + `, "regions": [{"id": "eu"}, "eu"]}`, "regions: duplicate region \"eu\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h RelayAllocations
			if err := json.Unmarshal([]byte(tc.json), &h); err != nil {
				t.Fatal(err)
			}
			err := h.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil || strings.HasPrefix(err.Error(), "relay_allocations") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q (Caddy prefixes the module)", err, tc.want)
			}
		})
	}
}

// Failures found only once placeholders are replaced, in Provision. Each
// happens before the handler touches Caddy's storage, so a bare context
// does.
func TestRelayAllocationsProvisionErrors(t *testing.T) {
	t.Setenv("GAMEGATE_TEST_RELAY_SHORT", "too-short")
	t.Setenv("GAMEGATE_TEST_RELAY_ADDR", "no-port")
	t.Setenv("GAMEGATE_TEST_RELAY_EMPTY", "")
	const secret = `"secrets": ["0123456789abcdef"]`
	tests := []struct {
		name string
		json string
		want string
	}{
		{"short secret", `{"secrets": ["0123456789abcdef", "{env.GAMEGATE_TEST_RELAY_SHORT}"], "tokens": ["t"], "public_address": "203.0.113.7:7777"}`, "secrets: secret 2 is 9 bytes, want at least 16"},
		{"unset secret", `{"secrets": ["{env.GAMEGATE_TEST_RELAY_UNSET_XYZ}"], "tokens": ["t"], "public_address": "203.0.113.7:7777"}`, "secrets: \"{env.GAMEGATE_TEST_RELAY_UNSET_XYZ}\" is empty after replacing placeholders"},
		{"empty token", `{` + secret + `, "tokens": ["t", "{env.GAMEGATE_TEST_RELAY_EMPTY}"], "public_address": "203.0.113.7:7777"}`, "tokens: \"{env.GAMEGATE_TEST_RELAY_EMPTY}\" is empty"},
		{"bad address", `{` + secret + `, "tokens": ["t"], "public_address": "{env.GAMEGATE_TEST_RELAY_ADDR}"}`, "public_address: \"no-port\": want host:port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h RelayAllocations
			if err := json.Unmarshal([]byte(tc.json), &h); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := h.Provision(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if err := h.Cleanup(); err != nil {
				t.Fatalf("cleanup after a failed provision: %v", err)
			}
		})
	}
}
