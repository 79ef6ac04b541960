package caddyqos

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/gamegate/gamegate/handlers/qos"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

func TestQoSCheckOutput(t *testing.T) {
	ban, _ := wireqos.Ban(2)
	server := &qos.ServerResult{
		Addr: netip.MustParseAddrPort("127.0.0.1:9000"), Sent: 10, Received: 8,
		Latencies:    []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond, 6 * time.Millisecond, 7 * time.Millisecond, 8 * time.Millisecond},
		Flow:         ban,
		SkippedUntil: time.Date(2026, 1, 1, 10, 4, 30, 0, time.UTC),
	}
	regions := []qos.RegionResult{{Region: "eu", ServerResult: server}}
	var table bytes.Buffer
	if err := writeQoSTable(&table, regions); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"eu", "127.0.0.1:9000", "20.0%", "4.000ms", "8.000ms", "ban 4m0s, stay away until 10:04:30"} {
		if !strings.Contains(table.String(), want) {
			t.Fatalf("table:\n%s\nwant it to contain %q", table.String(), want)
		}
	}
	var out bytes.Buffer
	if err := writeQoSJSON(&out, regions); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Regions []qosRegionJSON `json:"regions"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Regions[0]
	if r.Region != "eu" || r.Loss < 0.199 || r.Loss > 0.201 || r.P50Ms != 4 || r.P95Ms != 8 || r.FlowControl != "ban 4m0s" {
		t.Fatalf("JSON: got %+v", r)
	}
}

// qos-check's flags default to what the Checker does with a zero field,
// so that the command and the library cannot drift apart.
func TestQoSCheckFlagDefaults(t *testing.T) {
	c, ok := caddycmd.Commands()["qos-check"]
	if !ok {
		t.Fatal("no qos-check command registered")
	}
	cmd := new(cobra.Command)
	c.CobraFunc(cmd)
	def := qos.CheckConfig{}.WithDefaults()
	for flag, want := range map[string]string{
		"requests": strconv.Itoa(def.Requests),
		"wait":     def.Wait.String(),
		"title":    def.Title,
	} {
		f := cmd.Flags().Lookup(flag)
		if f == nil {
			t.Errorf("--%s: no such flag", flag)
			continue
		}
		if f.DefValue != want {
			t.Errorf("--%s default: got %q, want %q (qos.CheckConfig's)", flag, f.DefValue, want)
		}
	}
}
