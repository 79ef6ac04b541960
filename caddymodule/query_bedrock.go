package caddymodule

import (
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
	// attempt_timeout: the time one attempt waits for the answer (default
	// 1s); retries: attempts after the first, -1 for none (default 1).
	attemptOptions

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
func (p *QueryBedrock) Provision(ctx caddy.Context) error {
	if err := p.provision(ctx, queryBedrockBlock); err != nil {
		return err
	}
	p.QueryProtocol = &bedrock.QueryProtocol{
		UDPExchange: p.exchange(),
	}
	return nil
}

// Validate checks the configuration.
func (p *QueryBedrock) Validate() error { return p.validate() }

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	bedrock {
//		attempt_timeout <duration>
//		retries         <count>
//	}
func (p *QueryBedrock) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return p.unmarshalCaddyfile(d, queryBedrockBlock)
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryBedrock)(nil)
	_ caddy.Validator       = (*QueryBedrock)(nil)
	_ caddyfile.Unmarshaler = (*QueryBedrock)(nil)
	_ query.Protocol        = (*QueryBedrock)(nil)
	_ query.PortFinder      = (*QueryBedrock)(nil)
)
