package caddyfreeciv

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/freeciv"
	"github.com/gamegate/gamegate/handlers/query"
	wirefreeciv "github.com/gamegate/gamegate/wire/freeciv"
)

// queryFreecivBlock names the protocol in deprecation warnings and Caddyfile errors:
// its block within game_query.
const queryFreecivBlock = "game_query freeciv"

func init() {
	caddy.RegisterModule(new(QueryFreeciv))
}

// QueryFreeciv is the Freeciv protocol for game_query. A status is a TCP
// probe whose JOIN_REQ carries a capability no server has: the server
// refuses it, so nothing joins the game, and its JOIN_REPLY says its version
// and capabilities. The "join" command probes with a real capability (the
// first argument, or join_capability) and reports whether such a client can
// join and what the server says; a probe the server accepts joins the game
// (a player is created for it until the server drops it), so game_query
// forwards join only to servers whose commands line names it. The "lan"
// command (with lan_group) only listens to announcements.
type QueryFreeciv struct {
	// Username in the probe's JOIN_REQ. Default: gamegate-probe.
	Username string `json:"username,omitempty"`
	// Capability the join command offers (a command forwarded only when the
	// server's commands name it: it joins the game). Default:
	// +Freeciv-3.0-network.
	JoinCapability string `json:"join_capability,omitempty"`
	// Time allowed for one probe. Default: 3s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Enables the LAN announcement query, for servers on the gateway's LAN
	// that announce themselves (freeciv-server --Announce IPv4): the group
	// requests go to and answers arrive on, Freeciv's being 225.1.1.1 (or
	// the unicast address a server's FREECIV_MULTICAST_GROUP names).
	// Default: off.
	LANGroup string `json:"lan_group,omitempty"`
	// UDP port LAN requests go to. Default: 4555.
	LANRequestPort int `json:"lan_request_port,omitempty"`
	// UDP port LAN announcements arrive on. Default: 4556.
	LANAnswerPort int `json:"lan_answer_port,omitempty"`
	// Network interface to join the LAN group on. Default: the system's.
	LANInterface string `json:"lan_interface,omitempty"`
	// How long LAN announcements are awaited. Default: 1s.
	LANWait caddy.Duration `json:"lan_wait,omitempty"`

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

// Ranges of the Freeciv query protocol's options.
var portRange = caddyglue.IntRange{Lo: 1, Hi: 65535}

// Validate checks the configuration.
func (p *QueryFreeciv) Validate() error {
	c := caddyglue.FieldChecker()
	if len(p.Username) >= wirefreeciv.MaxLenName {
		c.Fail("username", "must be shorter than %d bytes", wirefreeciv.MaxLenName)
	}
	if len(p.JoinCapability) >= wirefreeciv.MaxLenCapstr {
		c.Fail("join_capability", "must be shorter than %d bytes", wirefreeciv.MaxLenCapstr)
	}
	c.DurationIn("timeout", p.Timeout, caddyglue.TimeoutRange)
	if p.LANGroup != "" {
		if _, err := netip.ParseAddr(p.LANGroup); err != nil {
			c.Fail("lan_group", "%q is not an IP address", p.LANGroup)
		}
	}
	c.OptIn("lan_request_port", int64(p.LANRequestPort), portRange)
	c.OptIn("lan_answer_port", int64(p.LANAnswerPort), portRange)
	c.DurationIn("lan_wait", p.LANWait, caddyglue.TimeoutRange)
	return c.Err
}

// Provision builds the prober.
func (p *QueryFreeciv) Provision(caddy.Context) error {
	p.QueryProtocol = &freeciv.QueryProtocol{
		Prober:         freeciv.Prober{Username: p.Username, Timeout: time.Duration(p.Timeout)},
		JoinCapability: p.JoinCapability,
	}
	if p.LANGroup != "" {
		group, err := netip.ParseAddr(p.LANGroup)
		if err != nil {
			return fmt.Errorf("lan_group: %q is not an IP address", p.LANGroup)
		}
		lan := &freeciv.LAN{Group: group, RequestPort: p.LANRequestPort, AnswerPort: p.LANAnswerPort, Wait: time.Duration(p.LANWait)}
		if p.LANInterface != "" {
			if lan.Interface, err = net.InterfaceByName(p.LANInterface); err != nil {
				return fmt.Errorf("lan_interface: %v", err)
			}
		}
		p.QueryProtocol.LAN = lan
	}
	return nil
}

// UnmarshalCaddyfile sets up the protocol from Caddyfile tokens. Syntax:
//
//	freeciv {
//		username         <name>
//		join_capability  <capability>
//		timeout          <duration>
//		lan_group        <ip>
//		lan_request_port <port>
//		lan_answer_port  <port>
//		lan_interface    <name>
//		lan_wait         <duration>
//	}
func (p *QueryFreeciv) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseModuleBlock(d, queryFreecivBlock, nil, func(opt string) error {
		var err error
		switch opt {
		case "username":
			p.Username, err = caddyglue.ParseSingleArg(d)
		case "join_capability":
			p.JoinCapability, err = caddyglue.ParseSingleArg(d)
		case "timeout":
			p.Timeout, err = caddyglue.ParseDurationIn(d, caddyglue.TimeoutRange)
		case "lan_group":
			if p.LANGroup, err = caddyglue.ParseSingleArg(d); err == nil {
				if _, perr := netip.ParseAddr(p.LANGroup); perr != nil {
					return d.Errf("%s: lan_group: '%s' is not an IP address", queryFreecivBlock, p.LANGroup)
				}
			}
		case "lan_request_port":
			p.LANRequestPort, err = caddyglue.ParseIntIn(d, portRange)
		case "lan_answer_port":
			p.LANAnswerPort, err = caddyglue.ParseIntIn(d, portRange)
		case "lan_interface":
			p.LANInterface, err = caddyglue.ParseSingleArg(d)
		case "lan_wait":
			p.LANWait, err = caddyglue.ParseDurationIn(d, caddyglue.TimeoutRange)
		default:
			return caddyglue.UnknownOption(d, queryFreecivBlock, opt)
		}
		return err
	})
}

// Interface guards
var (
	_ caddy.Provisioner     = (*QueryFreeciv)(nil)
	_ caddy.Validator       = (*QueryFreeciv)(nil)
	_ caddyfile.Unmarshaler = (*QueryFreeciv)(nil)
	_ query.Protocol        = (*QueryFreeciv)(nil)
)
