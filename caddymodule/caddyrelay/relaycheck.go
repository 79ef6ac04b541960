package caddyrelay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
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
A message whose echo has not come 2 s after it was sent (a third of
--timeout if that is less) is lost, and the next one takes its place.
Exits with status 1 if any message was lost, or if --timeout ended the
check before every message was sent.

The API token can come from the GAMEGATE_RELAY_TOKEN environment variable.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("api", "", "base URL of the allocations API (e.g. http://127.0.0.1:8080/relay)")
			cmd.Flags().String("token", "", "bearer token for the API (default: $GAMEGATE_RELAY_TOKEN)")
			cmd.Flags().Int("messages", relay.DefaultCheckMessages, "round trips to measure")
			cmd.Flags().Int("size", relay.DefaultCheckSize, "bytes per message")
			cmd.Flags().Int("window", relay.DefaultCheckWindow, "messages in flight")
			cmd.Flags().String("region", "", "region to allocate in (default: the API's)")
			cmd.Flags().Duration("timeout", relay.DefaultCheckTimeout, "time allowed for the whole check")
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
		fmt.Printf("round trips    %d sent, %d received, %s lost", res.Sent, res.Received, lossPercent(res.Lost, res.Sent))
		if res.Lost > 0 {
			fmt.Printf(" (%d messages, no echo within %v", res.Lost, res.LossTimeout)
			if res.Late > 0 {
				fmt.Printf("; %d came later", res.Late)
			}
			fmt.Print(")")
		}
		fmt.Println()
		fmt.Printf("latency        p50 %.3fms  p95 %.3fms  p99 %.3fms\n", res.P50ms, res.P95ms, res.P99ms)
	}
	switch {
	case res.Lost > 0:
		return 1, fmt.Errorf("relay-check: %d of %d messages lost", res.Lost, res.Sent)
	case res.Sent < res.Messages:
		return 1, fmt.Errorf("relay-check: --timeout ended the check after %d of %d messages", res.Sent, res.Messages)
	}
	return 0, nil
}

// lossPercent is lost of sent as a percentage that shows any loss: 0.0%
// only when nothing was lost.
func lossPercent(lost, sent int) string {
	if lost == 0 || sent == 0 {
		return "0.0%"
	}
	p := 100 * float64(lost) / float64(sent)
	if p >= 0.1 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'g', 2, 64) + "%"
}
