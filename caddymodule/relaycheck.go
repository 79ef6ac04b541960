package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/gamegate/gamegate/handlers/relay"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "relay-check",
		Usage: "--api <url> [--token <token>] [--messages <n>] [--size <bytes>] [--region <id>] [--json]",
		Short: "Allocates, joins and measures round trips through a relay",
		Long: `
Uses a relay the way two game clients do: the host allocates through the
allocations API and gets a join code, the joiner joins with it, both bind to
the relay named in their allocations, the joiner connects to the host, and
the joiner's messages are echoed by the host back through the relay.

Prints the relay, the allocation IDs, the time to allocate, bind and
connect, and round-trip latency (p50/p95/p99) and loss, or JSON with --json.
Exits with status 1 if any message was lost.

The API token can come from the GAMEGATE_RELAY_TOKEN environment variable.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("api", "", "base URL of the allocations API (e.g. http://127.0.0.1:8080/relay)")
			cmd.Flags().String("token", "", "bearer token for the API (default: $GAMEGATE_RELAY_TOKEN)")
			cmd.Flags().Int("messages", 100, "round trips to measure")
			cmd.Flags().Int("size", 64, "bytes per message")
			cmd.Flags().Int("window", 8, "messages in flight")
			cmd.Flags().String("region", "", "region to allocate in (default: the API's)")
			cmd.Flags().Duration("timeout", 30*time.Second, "time allowed for the whole check")
			cmd.Flags().Bool("json", false, "print JSON")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(cmdRelayCheck)
		},
	})
}

func cmdRelayCheck(fl caddycmd.Flags) (int, error) {
	api := fl.String("api")
	if api == "" {
		return 1, fmt.Errorf("relay-check: --api is required")
	}
	token := fl.String("token")
	if token == "" {
		token = os.Getenv("GAMEGATE_RELAY_TOKEN")
	}
	res, err := relay.Check(context.Background(), relay.CheckConfig{
		API:      &relay.APIClient{Base: api, Token: token, HTTP: &http.Client{Timeout: 10 * time.Second}},
		Region:   fl.String("region"),
		Messages: fl.Int("messages"),
		Size:     fl.Int("size"),
		Window:   fl.Int("window"),
		Timeout:  fl.Duration("timeout"),
	})
	if err != nil {
		return 1, fmt.Errorf("relay-check: %w", err)
	}
	if fl.Bool("json") {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return 1, err
		}
	} else {
		fmt.Printf("relay          %s (region %s)\n", res.Relay, res.Region)
		fmt.Printf("allocations    host %s, joiner %s (join code %s)\n", res.HostID, res.JoinerID, res.JoinCode)
		fmt.Printf("setup          allocate+join %v, bind %v, connect %v\n",
			res.AllocateTime.Round(time.Microsecond), res.BindTime.Round(time.Microsecond), res.ConnectTime.Round(time.Microsecond))
		fmt.Printf("round trips    %d sent, %d received, %.1f%% lost\n", res.Sent, res.Received, 100*float64(res.Sent-res.Received)/float64(max(res.Sent, 1)))
		fmt.Printf("latency        p50 %.3fms  p95 %.3fms  p99 %.3fms\n", res.P50ms, res.P95ms, res.P99ms)
	}
	if res.Received < res.Sent {
		return 1, fmt.Errorf("relay-check: %d of %d messages lost", res.Sent-res.Received, res.Sent)
	}
	return 0, nil
}
