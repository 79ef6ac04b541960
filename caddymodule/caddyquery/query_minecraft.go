package caddyquery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/minecraft"
	"github.com/gamegate/gamegate/handlers/query"
)

// queryMinecraftBlock names the protocol in deprecation warnings and Caddyfile errors:
// its block within game_query.
const queryMinecraftBlock = "game_query minecraft"

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
	// DNS servers (IP addresses, "ip:port" or "tcp/ip:port"; port 53 if
	// none is given) asked for SRV records and the names they point to,
	// one chosen at random for each question. Default: the system's
	// resolver.
	Resolvers []string `json:"resolvers,omitempty"`

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
	p.JavaProtocol = &minecraft.JavaProtocol{
		Timeout:         time.Duration(p.Timeout),
		ProtocolVersion: int32(p.ProtocolVersion),
		Legacy:          p.Legacy == nil || *p.Legacy,
		IncludeFavicon:  p.IncludeFavicon,
	}
	if len(p.Resolvers) > 0 {
		servers := make([]caddy.NetworkAddress, len(p.Resolvers))
		for i, r := range p.Resolvers {
			servers[i], _ = parseResolver(r) // Validate refuses a bad one
		}
		p.JavaProtocol.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			s := servers[rand.IntN(len(servers))]
			var d net.Dialer
			return d.DialContext(ctx, s.Network, s.JoinHostPort(0))
		}}
	}
	return nil
}

// parseResolver parses a DNS server's address: an IP address, with a port
// (default 53) and the network (udp, the default, or tcp).
func parseResolver(s string) (caddy.NetworkAddress, error) {
	na, err := caddy.ParseNetworkAddressWithDefaults(s, "udp", 53)
	switch {
	case err != nil:
		return na, err
	case na.Network != "udp" && na.Network != "tcp":
		return na, fmt.Errorf("network %q is neither udp nor tcp", na.Network)
	case na.PortRangeSize() != 1 || na.StartPort == 0:
		return na, errors.New("want one port")
	}
	if _, err := netip.ParseAddr(na.Host); err != nil {
		return na, errors.New("want an IP address")
	}
	return na, nil
}

// Validate checks the configuration.
func (p *QueryMinecraft) Validate() error {
	c := caddyglue.FieldChecker()
	if c.DurationIn("timeout", p.Timeout, caddyglue.TimeoutRange); c.Err != nil {
		return c.Err
	}
	if p.ProtocolVersion < -1 || p.ProtocolVersion > 1<<30 {
		return fmt.Errorf("protocol_version must be -1 or a protocol number, not %d", p.ProtocolVersion)
	}
	for _, r := range p.Resolvers {
		if _, err := parseResolver(r); err != nil {
			return fmt.Errorf("resolvers: %q: %w", r, err)
		}
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
//		resolvers        <ip[:port]> ...
//	}
func (p *QueryMinecraft) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseModuleBlock(d, queryMinecraftBlock, nil, func(opt string) error {
		var err error
		switch opt {
		case "timeout":
			p.Timeout, err = caddyglue.ParseDurationIn(d, caddyglue.TimeoutRange)
		case "protocol_version":
			p.ProtocolVersion, err = caddyglue.ParseIntRange(d, -1, 1<<30)
		case "legacy":
			var on bool
			on, err = parseOnOffArg(d)
			p.Legacy = &on
		case "include_favicon":
			p.IncludeFavicon, err = parseOnOffArg(d)
		case "resolvers":
			if p.Resolvers, err = caddyglue.ParseArgs(d); err != nil {
				return err
			}
			for _, r := range p.Resolvers {
				if _, perr := parseResolver(r); perr != nil {
					return d.Errf("%s: resolvers: '%s': %v", queryMinecraftBlock, r, perr)
				}
			}
		default:
			return caddyglue.UnknownOption(d, queryMinecraftBlock, opt)
		}
		return err
	})
}

// parseOnOffArg reads an option's on or off.
func parseOnOffArg(d *caddyfile.Dispenser) (bool, error) {
	v, err := caddyglue.ParseOneOf(d, "on", "off")
	return v == "on", err
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryMinecraft)(nil)
	_ caddy.Validator       = (*QueryMinecraft)(nil)
	_ caddyfile.Unmarshaler = (*QueryMinecraft)(nil)
	_ query.Protocol        = (*QueryMinecraft)(nil)
	_ query.PortFinder      = (*QueryMinecraft)(nil)
)
