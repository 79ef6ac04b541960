package caddyqos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/gamegate/gamegate/handlers/discovery"
	"github.com/gamegate/gamegate/handlers/qos"
)

func init() {
	// The flags' defaults are the Checker's own.
	def := qos.CheckConfig{}.WithDefaults()
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "qos-check",
		Usage: "(--discovery <url> --fleet <id> ... | --server [<region>=]<host:port> ...) [--requests <n>] [--wait <duration>] [--size <bytes>] [--json]",
		Short: "Measures latency and loss to QoS echo servers, per region",
		Long: `
Runs a QoS check the way game clients should: each distinct QoS server is
contacted once for all the regions it serves, with a burst of requests
(--requests); responses carry back the send time, so latency is measured
per response; duplicates and responses from another check are discarded;
a server's back-off or ban is reported, with the time to stay away.

Servers come from a discovery service (--discovery with the service's base
URL, and --fleet, repeatable) or are given with --server, repeated, as
host:port or region=host:port. With discovery, IPv4 addresses are used unless
--ipv6 is set or a server has only an IPv6 address. The discovery service's
API key (--api-key, or the GAMEGATE_DISCOVERY_KEY environment variable, which
keeps it out of the process list) is sent as "Authorization: Bearer", which
Caddy's access log redacts.

Prints a table per region (latency p50/p95, loss, flow control), or JSON with
--json. Exits with status 1 if a region got no response at all.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().StringArray("server", nil, "QoS server as [region=]host:port (repeatable)")
			cmd.Flags().String("discovery", "", "base URL of a discovery service (e.g. http://127.0.0.1:8080)")
			cmd.Flags().StringArray("fleet", nil, "fleet ID to discover (repeatable; with --discovery)")
			cmd.Flags().String("api-key", "", "API key sent to the discovery service as Authorization: Bearer (default: $GAMEGATE_DISCOVERY_KEY)")
			cmd.Flags().Bool("ipv6", false, "with discovery, contact servers over IPv6")
			cmd.Flags().Int("requests", def.Requests, "requests per server (the protocol recommends 10-20)")
			cmd.Flags().Duration("wait", def.Wait, "how long to wait for responses after the last request")
			cmd.Flags().Int("size", 0, "pad requests to this many bytes (at most 1500)")
			cmd.Flags().String("title", def.Title, "game title sent in each request")
			cmd.Flags().String("local", "", "local address to send from")
			cmd.Flags().Bool("json", false, "print JSON instead of a table")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(cmdQoSCheck)
		},
	})
}

func cmdQoSCheck(fl caddycmd.Flags) (int, error) {
	servers, err := fl.GetStringArray("server")
	if err != nil {
		return 1, err
	}
	fleets, err := fl.GetStringArray("fleet")
	if err != nil {
		return 1, err
	}
	targets, err := qos.ParseTargets(context.Background(), servers)
	if err != nil {
		return 1, fmt.Errorf("qos-check: --server %w", err)
	}
	if base := fl.String("discovery"); base != "" {
		if len(fleets) == 0 {
			return 1, fmt.Errorf("qos-check: --discovery needs at least one --fleet")
		}
		client := &discovery.Client{HTTP: &http.Client{Timeout: 10 * time.Second}}
		key := fl.String("api-key")
		if key == "" {
			key = os.Getenv("GAMEGATE_DISCOVERY_KEY")
		}
		if key != "" {
			// Caddy's access log redacts Authorization, not X-Api-Key.
			client.Header = http.Header{"Authorization": {"Bearer " + key}}
		}
		found, err := client.QoSTargets(context.Background(), base, fleets, fl.Bool("ipv6"))
		if err != nil {
			return 1, fmt.Errorf("qos-check: %w", err)
		}
		targets = append(targets, found...)
	} else if len(fleets) > 0 {
		return 1, fmt.Errorf("qos-check: --fleet needs --discovery")
	}
	if len(targets) == 0 {
		return 1, fmt.Errorf("qos-check: give --discovery <url> --fleet <id>, or --server [region=]host:port")
	}
	checker, err := qos.NewChecker(qos.CheckConfig{
		Title:      fl.String("title"),
		Requests:   fl.Int("requests"),
		Wait:       fl.Duration("wait"),
		PacketSize: fl.Int("size"),
		Local:      fl.String("local"),
	})
	if err != nil {
		return 1, fmt.Errorf("qos-check: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fl.Duration("wait")+30*time.Second)
	defer cancel()
	results, err := checker.Check(ctx, targets)
	if err != nil {
		return 1, fmt.Errorf("qos-check: %w", err)
	}
	regions := qos.ByRegion(targets, results)
	if fl.Bool("json") {
		err = writeQoSJSON(os.Stdout, regions)
	} else {
		err = writeQoSTable(os.Stdout, regions)
	}
	if err != nil {
		return 1, err
	}
	for _, r := range regions {
		if r.Received == 0 {
			return 1, fmt.Errorf("qos-check: region %s got no response", r.Region)
		}
	}
	return 0, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func flowText(r qos.RegionResult) string {
	switch {
	case r.Skipped:
		return "skipped until " + r.SkippedUntil.Format(time.RFC3339)
	case r.Flow.IsBan() || r.Flow.IsBackoff():
		return r.Flow.String() + ", stay away until " + r.SkippedUntil.Format(time.TimeOnly)
	}
	return "none"
}

func writeQoSTable(w io.Writer, regions []qos.RegionResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REGION\tSERVER\tSENT\tRECEIVED\tLOSS\tP50\tP95\tFLOW CONTROL")
	for _, r := range regions {
		p50, p95 := "-", "-"
		if r.Received > 0 {
			p50 = fmt.Sprintf("%.3fms", millis(r.Percentile(50)))
			p95 = fmt.Sprintf("%.3fms", millis(r.Percentile(95)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f%%\t%s\t%s\t%s\n",
			r.Region, r.Addr, r.Sent, r.Received, 100*r.Loss(), p50, p95, flowText(r))
	}
	return tw.Flush()
}

type qosRegionJSON struct {
	Region       string  `json:"region"`
	Server       string  `json:"server"`
	Sent         int     `json:"sent"`
	Received     int     `json:"received"`
	Duplicates   int     `json:"duplicates"`
	Stale        int     `json:"stale"`
	Loss         float64 `json:"loss"`
	P50Ms        float64 `json:"latency_p50_ms"`
	P95Ms        float64 `json:"latency_p95_ms"`
	FlowControl  string  `json:"flow_control"`
	Skipped      bool    `json:"skipped,omitempty"`
	SkippedUntil string  `json:"skipped_until,omitempty"`
	Error        string  `json:"error,omitempty"`
}

func writeQoSJSON(w io.Writer, regions []qos.RegionResult) error {
	out := struct {
		Regions []qosRegionJSON `json:"regions"`
	}{Regions: []qosRegionJSON{}}
	for _, r := range regions {
		j := qosRegionJSON{
			Region: r.Region, Server: r.Addr.String(), Sent: r.Sent, Received: r.Received,
			Duplicates: r.Duplicates, Stale: r.Stale, Loss: r.Loss(),
			P50Ms: millis(r.Percentile(50)), P95Ms: millis(r.Percentile(95)),
			FlowControl: r.Flow.String(), Skipped: r.Skipped,
		}
		if !r.SkippedUntil.IsZero() {
			j.SkippedUntil = r.SkippedUntil.Format(time.RFC3339)
		}
		if r.Err != nil {
			j.Error = r.Err.Error()
		}
		out.Regions = append(out.Regions, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
