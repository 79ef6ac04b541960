package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/quake3"
	"github.com/gamegate/gamegate/handlers/query"
)

func init() {
	caddy.RegisterModule(new(QueryQuake3))
}

// QueryQuake3 is the Quake 3 family's server query for game_query
// (ioquake3, OpenArena, Quake III Arena, Urban Terror, DarkPlaces, Xonotic,
// Nexuiz and other engines answering getstatus/getinfo). Each query carries
// a random challenge and only the answer echoing it is taken. A status maps
// the info string's host name (without colour codes), map, version, max
// players and password flag, and one player per status line (bots are the
// players with ping 0); the info string is kept under raw. Commands: info,
// rules, players.
//
// ioquake3 answers at most 10 queries a second from one address; keep the
// gateway's upstream_rate at or below that.
type QueryQuake3 struct {
	// attempt_timeout: the time one attempt waits for the answer (default
	// 1s); retries: attempts after the first, -1 for none (default 1).
	attemptOptions

	// The protocol itself, built by Provision: Name, Status and Command.
	*quake3.QueryProtocol `json:"-"`
}

// CaddyModule returns the Caddy module information.
func (*QueryQuake3) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.query.quake3",
		New: func() caddy.Module { return new(QueryQuake3) },
	}
}

// Provision builds the protocol.
func (p *QueryQuake3) Provision(ctx caddy.Context) error {
	if err := p.provision(ctx, queryQuake3Block); err != nil {
		return err
	}
	p.QueryProtocol = &quake3.QueryProtocol{
		UDPExchange: p.exchange(),
	}
	return nil
}

// Validate checks the configuration.
func (p *QueryQuake3) Validate() error { return p.validate() }

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	quake3 {
//		attempt_timeout <duration>
//		retries         <count>
//	}
func (p *QueryQuake3) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return p.unmarshalCaddyfile(d, queryQuake3Block)
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryQuake3)(nil)
	_ caddy.Validator       = (*QueryQuake3)(nil)
	_ caddyfile.Unmarshaler = (*QueryQuake3)(nil)
	_ query.Protocol        = (*QueryQuake3)(nil)
)
