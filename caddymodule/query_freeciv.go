package caddymodule

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/freeciv"
	"github.com/gamegate/gamegate/handlers/query"
)

func init() {
	caddy.RegisterModule(new(QueryFreeciv))
}

// QueryFreeciv is the Freeciv protocol for game_query. A status is a TCP
// probe whose JOIN_REQ carries a capability no server has: the server
// refuses it, so nothing joins the game, and its JOIN_REPLY says its version
// and capabilities. The "join" command probes with a real capability (the
// first argument, or join_capability) and reports whether such a client can
// join and what the server says.
type QueryFreeciv struct {
	// Username in the probe's JOIN_REQ. Default: gamegate-probe.
	Username string `json:"username,omitempty"`
	// Capability the join command offers. Default: +Freeciv-3.0-network.
	JoinCapability string `json:"join_capability,omitempty"`
	// Time allowed for one probe. Default: 3s.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// The protocol itself, built by Provision: Name, Status and Command.
	*freeciv.QueryProtocol `json:"-"`
}

// CaddyModule returns the Caddy module information.
func (*QueryFreeciv) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.query.freeciv",
		New: func() caddy.Module { return new(QueryFreeciv) },
	}
}

// Provision builds the prober.
func (p *QueryFreeciv) Provision(caddy.Context) error {
	p.QueryProtocol = &freeciv.QueryProtocol{
		Prober:         freeciv.Prober{Username: p.Username, Timeout: time.Duration(p.Timeout)},
		JoinCapability: p.JoinCapability,
	}
	return nil
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	freeciv {
//		username        <name>
//		join_capability <capability>
//		timeout         <duration>
//	}
func (p *QueryFreeciv) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the protocol name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, "freeciv", nil, func(opt string) error {
		var err error
		switch opt {
		case "username":
			p.Username, err = parseSingleArg(d)
		case "join_capability":
			p.JoinCapability, err = parseSingleArg(d)
		case "timeout":
			p.Timeout, err = parseDuration(d)
		default:
			return unknownOption(d, "freeciv", opt)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryFreeciv)(nil)
	_ caddyfile.Unmarshaler = (*QueryFreeciv)(nil)
	_ query.Protocol        = (*QueryFreeciv)(nil)
)
