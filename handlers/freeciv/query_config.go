package freeciv

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	wirefreeciv "github.com/gamegate/gamegate/wire/freeciv"
)

// MaxTimeout bounds timeout and lan_wait.
const MaxTimeout = time.Hour

// QueryConfig is the freeciv game query protocol's configuration
// (gamegate.query.freeciv): a status is a TCP probe whose JOIN_REQ
// carries a capability no server has, so nothing joins the game; the
// "join" command probes with a real one; the "lan" command (with
// lan_group) only listens to announcements.
type QueryConfig struct {
	// Username in the probe's JOIN_REQ. Default: gamegate-probe.
	Username string `json:"username,omitempty"`
	// Capability the join command offers (a command forwarded only when the
	// server's commands name it: it joins the game). Default:
	// +Freeciv-3.0-network.
	JoinCapability string `json:"join_capability,omitempty"`
	// Time allowed for one probe, at most 1h. Default: 3s.
	Timeout duration.Duration `json:"timeout,omitempty"`
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
	// How long LAN announcements are awaited, at most 1h. Default: 1s.
	LANWait duration.Duration `json:"lan_wait,omitempty"`
}

// Validate checks every option; zero values (the defaults) pass.
func (c *QueryConfig) Validate() error {
	var check bounds.Check
	if len(c.Username) >= wirefreeciv.MaxLenName {
		check.Failf("username must be shorter than %d bytes", wirefreeciv.MaxLenName)
	}
	if len(c.JoinCapability) >= wirefreeciv.MaxLenCapstr {
		check.Failf("join_capability must be shorter than %d bytes", wirefreeciv.MaxLenCapstr)
	}
	check.Duration("timeout", c.Timeout.Std(), 0, MaxTimeout)
	if err := c.CheckOption("lan_group", c.LANGroup); err != nil {
		check.Failf("lan_group %v", err)
	}
	check.Int("lan_request_port", c.LANRequestPort, 1, 65535)
	check.Int("lan_answer_port", c.LANAnswerPort, 1, 65535)
	check.Duration("lan_wait", c.LANWait.Std(), 0, MaxTimeout)
	if c.LANGroup == "" {
		for _, o := range []struct {
			name string
			set  bool
		}{{"lan_request_port", c.LANRequestPort != 0}, {"lan_answer_port", c.LANAnswerPort != 0},
			{"lan_interface", c.LANInterface != ""}, {"lan_wait", c.LANWait != 0}} {
			if o.set {
				check.Failf("%s configures the LAN query, which only lan_group enables", o.name)
			}
		}
	}
	return check.Err()
}

// CheckOption checks lan_group's form: an IP address, or none.
func (*QueryConfig) CheckOption(name, value string) error {
	if name != "lan_group" || value == "" {
		return nil
	}
	if _, err := netip.ParseAddr(value); err != nil {
		return fmt.Errorf("'%s' is not an IP address", value)
	}
	return nil
}

// NewProtocol builds the prober, and the LAN query when lan_group is set.
func (c *QueryConfig) NewProtocol() (query.Protocol, error) {
	p := &QueryProtocol{
		Prober:         Prober{Username: c.Username, Timeout: c.Timeout.Std()},
		JoinCapability: c.JoinCapability,
	}
	if c.LANGroup != "" {
		group, err := netip.ParseAddr(c.LANGroup)
		if err != nil {
			return nil, fmt.Errorf("lan_group: %q is not an IP address", c.LANGroup)
		}
		lan := &LAN{Group: group, RequestPort: c.LANRequestPort, AnswerPort: c.LANAnswerPort, Wait: c.LANWait.Std()}
		if c.LANInterface != "" {
			if lan.Interface, err = net.InterfaceByName(c.LANInterface); err != nil {
				return nil, fmt.Errorf("lan_interface: %v", err)
			}
		}
		p.LAN = lan
	}
	return p, nil
}

var (
	_ query.ProtocolConfig = (*QueryConfig)(nil)
	_ query.OptionChecker  = (*QueryConfig)(nil)
)
