package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/bedrock"
	"github.com/gamegate/gamegate/handlers/query"
)

func init() {
	caddy.RegisterModule(new(QueryBedrock))
}

// QueryBedrock is Minecraft Bedrock edition's server status for game_query
// (and Minecraft Education's, and servers such as PocketMine-MP, Nukkit and
// Geyser that answer as Bedrock does): RakNet's unconnected ping over UDP,
// answered by a pong whose advertisement holds the MOTD, protocol, version,
// players online and max, level name, game mode and ports. Each ping
// carries a random time and only the pong echoing it is taken. A status
// maps the MOTD's first line (without § codes) as the name, its second
// line (the level name) as the map, version and player counts; every field
// is kept under raw (gamemode, gamemode_numeric, port_v4, …) and latency is
// the ping's round trip. The pong lists no players. A server address
// without a port gets Bedrock's 19132. Command: raw (the advertisement as
// sent).
type QueryBedrock struct {
	// Time one attempt waits for the pong. Default: 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Attempts after the first; -1 for none. Default: 1.
	Retries int `json:"retries,omitempty"`

	// The protocol itself, built by Provision: Name, Status and Command.
	*bedrock.QueryProtocol `json:"-"`
}

// CaddyModule returns the Caddy module information.
func (*QueryBedrock) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.query.bedrock",
		New: func() caddy.Module { return new(QueryBedrock) },
	}
}

// Provision builds the protocol.
func (p *QueryBedrock) Provision(caddy.Context) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.QueryProtocol = &bedrock.QueryProtocol{
		UDPExchange: query.UDPExchange{Timeout: time.Duration(p.Timeout), Retries: p.Retries},
	}
	return nil
}

// Validate checks the configuration.
func (p *QueryBedrock) Validate() error {
	if p.Timeout < 0 {
		return fmt.Errorf("bedrock: timeout must not be negative")
	}
	if p.Retries < -1 || p.Retries > 10 {
		return fmt.Errorf("bedrock: retries must be from -1 to 10, not %d", p.Retries)
	}
	return nil
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	bedrock {
//		timeout <duration>
//		retries <count>
//	}
func (p *QueryBedrock) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the protocol name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, "bedrock", nil, func(opt string) error {
		var err error
		switch opt {
		case "timeout":
			p.Timeout, err = parseDuration(d)
		case "retries":
			p.Retries, err = parseIntRange(d, -1, 10)
		default:
			return unknownOption(d, "bedrock", opt)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryBedrock)(nil)
	_ caddy.Validator       = (*QueryBedrock)(nil)
	_ caddyfile.Unmarshaler = (*QueryBedrock)(nil)
	_ query.Protocol        = (*QueryBedrock)(nil)
)
