package caddygqp

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/gqp"
	"github.com/gamegate/gamegate/handlers/query"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// queryGQPBlock names the protocol in deprecation warnings and Caddyfile errors:
// its block within game_query (told from the GQP responder).
const queryGQPBlock = "game_query gqp"

func init() {
	caddy.RegisterModule(new(QueryGQP))
}

// QueryGQP is the GQP protocol for game_query: commands are sent as they
// are, and a server's status comes from identify plus an optional status
// command (its name/value records hostname, map, numplayers, maxplayers and
// a labeled list "players" fill the normalised fields).
type QueryGQP struct {
	// attempt_timeout: the time one attempt waits for a complete answer,
	// at most 1h (default 1s); retries: attempts after the first, -1
	// (none) to 10 (default 1).
	caddyquery.AttemptOptions
	// Queries are padded to this many bytes, so servers that refuse to
	// amplify (gamegate's own GQP responder among them) answer in full.
	// Default: 1200.
	PadTo int `json:"pad_to,omitempty"`
	// The command describing the server's state, asked with identify for
	// a status. Default: none (identify only).
	StatusCommand string `json:"status_command,omitempty"`
	// Largest answer accepted, in bytes. Default: 65536.
	MaxResponseSize int `json:"max_response_size,omitempty"`

	// Deprecated: the former name of max_response_size, still read (with
	// a warning at provision).
	MaxResponse int `json:"max_response,omitempty"`

	// The protocol itself, built by Provision: Name, Status and Command.
	*gqp.QueryProtocol `json:"-"`
}

// CaddyModule returns the Caddy module information.
func (*QueryGQP) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.query.gqp",
		New: func() caddy.Module { return new(QueryGQP) },
	}
}

// Ranges of the GQP query protocol's options.
var (
	queryGQPPadToRange       = caddyglue.IntRange{Lo: 0, Hi: 1500}
	queryGQPMaxResponseRange = caddyglue.IntRange{Lo: 64, Hi: wiregqp.MaxResponse}
)

// Validate checks the configuration.
func (p *QueryGQP) Validate() error {
	c := caddyglue.FieldChecker()
	p.CheckAttempts(c, "attempt_timeout")
	c.In("pad_to", int64(p.PadTo), queryGQPPadToRange)
	c.OptIn("max_response_size", int64(p.MaxResponseSize), queryGQPMaxResponseRange)
	return c.Err
}

// Provision builds the GQP client.
func (p *QueryGQP) Provision(ctx caddy.Context) error {
	if err := p.ProvisionAttempts(ctx, queryGQPBlock); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, queryGQPBlock, "max_response", "max_response_size", &p.MaxResponse, &p.MaxResponseSize); err != nil {
		return err
	}
	retries := p.Retries // the client reads 0 as 1 and -1 as none
	p.QueryProtocol = &gqp.QueryProtocol{
		Client: &gqp.Client{
			Timeout:     time.Duration(p.AttemptTimeout),
			Retries:     retries,
			PadTo:       p.PadTo,
			MaxResponse: p.MaxResponseSize,
		},
		StatusCommand: p.StatusCommand,
	}
	return nil
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	gqp {
//		attempt_timeout   <duration>
//		retries           <count>
//		pad_to            <bytes>
//		status_command    <command>
//		max_response_size <bytes>
//	}
func (p *QueryGQP) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseRenamedModuleBlock(d, queryGQPBlock, nil, caddyquery.MaxResponseFormerNames, func(opt string) error {
		if known, err := p.ParseAttemptOption(d, opt); known {
			return err
		}
		var err error
		switch opt {
		case "pad_to":
			p.PadTo, err = caddyglue.ParseSize[int](d, queryGQPPadToRange)
		case "status_command":
			p.StatusCommand, err = caddyglue.ParseSingleArg(d)
		case "max_response_size":
			p.MaxResponseSize, err = caddyglue.ParseSize[int](d, queryGQPMaxResponseRange)
		default:
			return caddyglue.UnknownOption(d, queryGQPBlock, opt)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryGQP)(nil)
	_ caddy.Validator       = (*QueryGQP)(nil)
	_ caddyfile.Unmarshaler = (*QueryGQP)(nil)
	_ query.Protocol        = (*QueryGQP)(nil)
)
