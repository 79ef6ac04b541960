package caddymodule

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/handlers/query"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

func init() {
	caddy.RegisterModule(new(QueryA2S))
}

// QueryA2S is Valve's server query protocol (A2S: Source and GoldSrc
// games) for game_query. A status asks A2S_INFO and A2S_PLAYER at once; the
// commands info, players and rules answer one query each in full. The
// challenge flows, split answers (Source and GoldSrc layouts) and
// bzip2-compressed answers are handled.
type QueryA2S struct {
	// Time one attempt waits for a complete answer, challenge included,
	// at most 1h. Default: 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Attempts after the first, -1 (none) to 10. Default: 1.
	Retries int `json:"retries,omitempty"`
	// Layout of split answers: auto (told from the first fragment),
	// source, source_no_size or goldsrc. Default: auto.
	SplitLayout string `json:"split_layout,omitempty"`
	// Most fragments one answer may have, 2 to 255. Default: 64.
	MaxPackets int `json:"max_packets,omitempty"`
	// Largest answer accepted, in bytes, compressed and decompressed.
	// Default: 131072.
	MaxResponse int `json:"max_response,omitempty"`

	// The protocol itself, built by Provision: Name, Status and Command.
	*a2s.QueryProtocol `json:"-"`
}

// CaddyModule returns the Caddy module information.
func (*QueryA2S) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.query.a2s",
		New: func() caddy.Module { return new(QueryA2S) },
	}
}

var splitLayouts = map[string]wirea2s.Layout{
	"":               wirea2s.LayoutAuto,
	"auto":           wirea2s.LayoutAuto,
	"source":         wirea2s.LayoutSource,
	"source_no_size": wirea2s.LayoutSourceNoSize,
	"goldsrc":        wirea2s.LayoutGoldSrc,
}

// validateA2SClient checks the options of an A2S client (a2s.ValidateClient),
// its timeout option named timeoutField, and its split layout.
func validateA2SClient(timeoutField string, timeout caddy.Duration, retries int, layout string, packets, response int) error {
	if _, ok := splitLayouts[layout]; !ok {
		return fmt.Errorf("split_layout: want auto, source, source_no_size or goldsrc, got %q", layout)
	}
	return a2s.ValidateClient(timeoutField, time.Duration(timeout), retries, packets, response)
}

// Provision builds the A2S client.
func (p *QueryA2S) Provision(caddy.Context) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.QueryProtocol = &a2s.QueryProtocol{Client: &a2s.Client{Timeout: time.Duration(p.Timeout), Retries: p.Retries,
		Layout: splitLayouts[p.SplitLayout], MaxPackets: p.MaxPackets, MaxMessage: p.MaxResponse}}
	return nil
}

// Validate checks the configuration.
func (p *QueryA2S) Validate() error {
	if p == nil {
		return errors.New("a2s: no configuration")
	}
	return validateA2SClient("timeout", p.Timeout, p.Retries, p.SplitLayout, p.MaxPackets, p.MaxResponse)
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	a2s {
//		timeout      <duration>
//		retries      <count>
//		split_layout auto|source|source_no_size|goldsrc
//		max_packets  <count>
//		max_response <bytes>
//	}
func (p *QueryA2S) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseModuleBlock(d, "a2s", nil, func(opt string) error {
		var err error
		switch opt {
		case "timeout":
			p.Timeout, err = parseDurationIn(d, timeoutRange)
		case "retries":
			p.Retries, err = parseIntRange(d, -1, a2s.MaxRetries)
		case "split_layout":
			p.SplitLayout, err = parseOneOf(d, "auto", "source", "source_no_size", "goldsrc")
		case "max_packets":
			p.MaxPackets, err = parseIntRange(d, a2s.MinMaxPackets, wirea2s.MaxSourcePackets)
		case "max_response":
			p.MaxResponse, err = parseIntRange(d, a2s.MinMaxResponse, a2s.MaxMaxResponse)
		default:
			return unknownOption(d, "a2s", opt)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryA2S)(nil)
	_ caddy.Validator       = (*QueryA2S)(nil)
	_ caddyfile.Unmarshaler = (*QueryA2S)(nil)
	_ query.Protocol        = (*QueryA2S)(nil)
)
