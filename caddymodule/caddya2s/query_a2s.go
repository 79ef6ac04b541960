package caddya2s

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/handlers/query"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// queryA2SBlock names the protocol in deprecation warnings and Caddyfile errors:
// its block within game_query (told from the a2s_shield).
const queryA2SBlock = "game_query a2s"

func init() {
	caddy.RegisterModule(new(QueryA2S))
}

// QueryA2S is Valve's server query protocol (A2S: Source and GoldSrc
// games) for game_query. A status asks A2S_INFO and A2S_PLAYER at once; the
// commands info, players and rules answer one query each in full. The
// challenge flows, split answers (Source and GoldSrc layouts) and
// bzip2-compressed answers are handled.
type QueryA2S struct {
	// attempt_timeout: the time one attempt waits for a complete answer,
	// challenge included, at most 1h (default 1s); retries: attempts after
	// the first, -1 (none) to 10 (default 1).
	caddyquery.AttemptOptions
	// Layout of split answers: auto (told from the first fragment),
	// source, source_no_size or goldsrc. Default: auto.
	SplitLayout string `json:"split_layout,omitempty"`
	// Most fragments one answer may have, 2 to 255. Default: 64.
	MaxPackets int `json:"max_packets,omitempty"`
	// Largest answer accepted, in bytes, compressed and decompressed.
	// Default: 131072.
	MaxResponseSize int `json:"max_response_size,omitempty"`

	// Deprecated: the former name of max_response_size, still read (with
	// a warning at provision).
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

// Ranges of the A2S client options.
var (
	a2sMaxPacketsRange  = caddyglue.IntRange{Lo: a2s.MinMaxPackets, Hi: wirea2s.MaxSourcePackets}
	a2sMaxResponseRange = caddyglue.IntRange{Lo: a2s.MinMaxResponse, Hi: a2s.MaxMaxResponse}
)

// validateA2SClient checks the options of an A2S client, its attempt
// timeout option named timeoutField; module prefixes the errors, if not
// empty.
func validateA2SClient(module, timeoutField string, timeout caddy.Duration, retries int, layout string, packets, response int) error {
	c := caddyglue.NewChecker(module)
	c.OneOf("split_layout", layout, a2s.LayoutNames...)
	(&caddyquery.AttemptOptions{AttemptTimeout: timeout, Retries: retries}).CheckAttempts(c, timeoutField)
	c.OptIn("max_packets", int64(packets), a2sMaxPacketsRange)
	c.OptIn("max_response_size", int64(response), a2sMaxResponseRange)
	return c.Err
}

func newA2SClient(timeout caddy.Duration, retries int, layout string, packets, response int) *a2s.Client {
	split, _ := a2s.ParseLayout(layout) // checked by Validate
	return &a2s.Client{Timeout: time.Duration(timeout), Retries: retries, Layout: split,
		MaxPackets: packets, MaxMessage: response}
}

// Provision builds the A2S client.
func (p *QueryA2S) Provision(ctx caddy.Context) error {
	if err := p.ProvisionAttempts(ctx, queryA2SBlock); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, queryA2SBlock, "max_response", "max_response_size", &p.MaxResponse, &p.MaxResponseSize); err != nil {
		return err
	}
	p.QueryProtocol = &a2s.QueryProtocol{Client: newA2SClient(p.AttemptTimeout, p.Retries, p.SplitLayout, p.MaxPackets, p.MaxResponseSize)}
	return nil
}

// Validate checks the configuration.
func (p *QueryA2S) Validate() error {
	return validateA2SClient("", "attempt_timeout", p.AttemptTimeout, p.Retries, p.SplitLayout, p.MaxPackets, p.MaxResponseSize)
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	a2s {
//		attempt_timeout   <duration>
//		retries           <count>
//		split_layout      auto|source|source_no_size|goldsrc
//		max_packets       <count>
//		max_response_size <bytes>
//	}
func (p *QueryA2S) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseRenamedModuleBlock(d, queryA2SBlock, nil, caddyquery.MaxResponseFormerNames, func(opt string) error {
		if known, err := p.ParseAttemptOption(d, opt); known {
			return err
		}
		var err error
		switch opt {
		case "split_layout":
			p.SplitLayout, err = caddyglue.ParseOneOf(d, a2s.LayoutNames...)
		case "max_packets":
			p.MaxPackets, err = caddyglue.ParseIntIn(d, a2sMaxPacketsRange)
		case "max_response_size":
			p.MaxResponseSize, err = caddyglue.ParseIntIn(d, a2sMaxResponseRange)
		default:
			return caddyglue.UnknownOption(d, queryA2SBlock, opt)
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
