package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/minecraft"
	"github.com/gamegate/gamegate/handlers/query"
)

func init() {
	caddy.RegisterModule(new(QueryMinecraft))
}

// QueryMinecraft is Minecraft Java edition's Server List Ping for
// game_query, over TCP: a handshake asking for the status, the status JSON
// (version, players online and max with their sample, the description as
// the name, its chat components and § codes flattened to plain text), and
// a ping whose round trip is the status's ping. A server address given as
// a bare host name (no port) is looked up as the _minecraft._tcp SRV
// record, as the game's client does. Servers older than 1.7 are asked the
// legacy FE 01 ping when they do not answer. Command: raw (the status JSON
// as sent, favicon included).
type QueryMinecraft struct {
	// Time allowed for one query: connecting, the status and the ping.
	// Default: 3s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Protocol number the handshake announces. Default: -1 (asking for the
	// status only, whatever the server's version).
	ProtocolVersion int `json:"protocol_version,omitempty"`
	// Asks the legacy FE 01 ping when a server does not answer the modern
	// one. Default: on.
	Legacy *bool `json:"legacy,omitempty"`
	// Keeps the favicon (a data: URI, often over 10 KB) in the status's raw
	// data. Default: off (the raw command has it).
	IncludeFavicon bool `json:"include_favicon,omitempty"`

	// The protocol itself, built by Provision: Name, Status and Command.
	*minecraft.JavaProtocol `json:"-"`
}

// CaddyModule returns the Caddy module information.
func (*QueryMinecraft) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gamegate.query.minecraft",
		New: func() caddy.Module { return new(QueryMinecraft) },
	}
}

// Provision builds the protocol.
func (p *QueryMinecraft) Provision(caddy.Context) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.JavaProtocol = &minecraft.JavaProtocol{
		Timeout:         time.Duration(p.Timeout),
		ProtocolVersion: int32(p.ProtocolVersion),
		Legacy:          p.Legacy == nil || *p.Legacy,
		IncludeFavicon:  p.IncludeFavicon,
	}
	return nil
}

// Validate checks the configuration.
func (p *QueryMinecraft) Validate() error {
	if p.Timeout < 0 {
		return fmt.Errorf("minecraft: timeout must not be negative")
	}
	if p.ProtocolVersion < -1 || p.ProtocolVersion > 1<<30 {
		return fmt.Errorf("minecraft: protocol_version must be -1 or a protocol number, not %d", p.ProtocolVersion)
	}
	return nil
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	minecraft {
//		timeout          <duration>
//		protocol_version <number>
//		legacy           on|off
//		include_favicon  on|off
//	}
func (p *QueryMinecraft) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseModuleBlock(d, "minecraft", nil, func(opt string) error {
		var err error
		switch opt {
		case "timeout":
			p.Timeout, err = parseDuration(d)
		case "protocol_version":
			p.ProtocolVersion, err = parseIntRange(d, -1, 1<<30)
		case "legacy":
			var on bool
			on, err = parseOnOffArg(d)
			p.Legacy = &on
		case "include_favicon":
			p.IncludeFavicon, err = parseOnOffArg(d)
		default:
			return unknownOption(d, "minecraft", opt)
		}
		return err
	})
}

// parseOnOffArg reads an option's on or off.
func parseOnOffArg(d *caddyfile.Dispenser) (bool, error) {
	v, err := parseOneOf(d, "on", "off")
	return v == "on", err
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryMinecraft)(nil)
	_ caddy.Validator       = (*QueryMinecraft)(nil)
	_ caddyfile.Unmarshaler = (*QueryMinecraft)(nil)
	_ query.Protocol        = (*QueryMinecraft)(nil)
)
