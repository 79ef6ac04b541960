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

// a2sClientLimits are the bounds of the A2S client options, shared by the
// query plugin and the shield.
const (
	a2sMinPackets  = 2
	a2sMinResponse = 1400
	a2sMaxResponse = 1 << 20
)

// validateA2SClient checks the options of an A2S client, its timeout
// option named timeoutField. With at most 11 attempts of at most
// timeoutRange's bound, every wait derived from them is well defined.
func validateA2SClient(module, timeoutField string, timeout caddy.Duration, retries int, layout string, packets, response int) error {
	if _, ok := splitLayouts[layout]; !ok {
		return fmt.Errorf("%s: split_layout: want auto, source, source_no_size or goldsrc, got %q", module, layout)
	}
	c := newChecker(module)
	if c.durationIn(timeoutField, timeout, timeoutRange); c.err != nil {
		return c.err
	}
	switch {
	case retries < -1 || retries > 10:
		return fmt.Errorf("%s: retries must be in [-1, 10]", module)
	case packets != 0 && (packets < a2sMinPackets || packets > wirea2s.MaxSourcePackets):
		return fmt.Errorf("%s: max_packets must be in [%d, %d]", module, a2sMinPackets, wirea2s.MaxSourcePackets)
	case response != 0 && (response < a2sMinResponse || response > a2sMaxResponse):
		return fmt.Errorf("%s: max_response must be in [%d, %d]", module, a2sMinResponse, a2sMaxResponse)
	}
	return nil
}

func newA2SClient(timeout caddy.Duration, retries int, layout string, packets, response int) *a2s.Client {
	return &a2s.Client{Timeout: time.Duration(timeout), Retries: retries, Layout: splitLayouts[layout],
		MaxPackets: packets, MaxMessage: response}
}

// Provision builds the A2S client.
func (p *QueryA2S) Provision(caddy.Context) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.QueryProtocol = &a2s.QueryProtocol{Client: newA2SClient(p.Timeout, p.Retries, p.SplitLayout, p.MaxPackets, p.MaxResponse)}
	return nil
}

// Validate checks the configuration.
func (p *QueryA2S) Validate() error {
	if p == nil {
		return errors.New("a2s: no configuration")
	}
	return validateA2SClient("a2s", "timeout", p.Timeout, p.Retries, p.SplitLayout, p.MaxPackets, p.MaxResponse)
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
			p.Retries, err = parseIntRange(d, -1, 10)
		case "split_layout":
			p.SplitLayout, err = parseOneOf(d, "auto", "source", "source_no_size", "goldsrc")
		case "max_packets":
			p.MaxPackets, err = parseIntRange(d, a2sMinPackets, wirea2s.MaxSourcePackets)
		case "max_response":
			p.MaxResponse, err = parseIntRange(d, a2sMinResponse, a2sMaxResponse)
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
