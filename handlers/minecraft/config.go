package minecraft

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
)

// The bounds of Config's options.
const (
	MaxTimeout         = time.Hour
	MaxProtocolVersion = 1 << 30
)

// Config is the minecraft game query protocol's configuration
// (gamegate.query.minecraft): Minecraft Java edition's Server List Ping
// over TCP, a bare host name looked up as its _minecraft._tcp SRV record.
type Config struct {
	// Time allowed for one query: connecting, the status and the ping, at
	// most 1h. Default: 3s.
	Timeout duration.Duration `json:"timeout,omitempty"`
	// Protocol number the handshake announces, -1 to 2^30. Default: -1
	// (asking for the status only, whatever the server's version).
	ProtocolVersion int `json:"protocol_version,omitempty"`
	// Asks the legacy FE 01 ping when a server does not answer the modern
	// one (on or off in the Caddyfile). Default: on.
	Legacy *bool `json:"legacy,omitempty" caddyfile:"onoff"`
	// Keeps the favicon (a data: URI, often over 10 KB) in the status's raw
	// data (on or off in the Caddyfile). Default: off (the raw command has
	// it).
	IncludeFavicon bool `json:"include_favicon,omitempty" caddyfile:"onoff"`
	// DNS servers (IP addresses, "ip:port" or "tcp/ip:port"; port 53 if
	// none is given) asked for SRV records and the names they point to,
	// one chosen at random for each question. Default: the system's
	// resolver.
	Resolvers []string `json:"resolvers,omitempty"`
}

// Validate checks every option; zero values (the defaults) pass.
func (c *Config) Validate() error {
	var check bounds.Check
	check.Duration("timeout", c.Timeout.Std(), 0, MaxTimeout)
	check.Int("protocol_version", c.ProtocolVersion, -1, MaxProtocolVersion)
	for _, r := range c.Resolvers {
		if _, _, err := ParseResolver(r); err != nil {
			check.Failf("resolvers: %q: %v", r, err)
		}
	}
	return check.Err()
}

// CheckOption checks each of resolvers.
func (*Config) CheckOption(name, value string) error {
	if name != "resolvers" {
		return nil
	}
	if _, _, err := ParseResolver(value); err != nil {
		return fmt.Errorf("'%s': %v", value, err)
	}
	return nil
}

// ParseResolver parses a DNS server's address: an IP address, with a port
// (default 53) and the network before a slash (udp, the default, or tcp).
func ParseResolver(s string) (network string, addr netip.AddrPort, err error) {
	network = "udp"
	if n, rest, ok := strings.Cut(s, "/"); ok {
		network, s = n, rest
	}
	if network != "udp" && network != "tcp" {
		return "", addr, fmt.Errorf("network %q is neither udp nor tcp", network)
	}
	host, port := s, uint64(53)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host = h
		if port, err = strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
			return "", addr, errors.New("want one port")
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", addr, errors.New("want an IP address")
	}
	return network, netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	p := &JavaProtocol{
		Timeout:         c.Timeout.Std(),
		ProtocolVersion: int32(c.ProtocolVersion),
		Legacy:          c.Legacy == nil || *c.Legacy,
		IncludeFavicon:  c.IncludeFavicon,
	}
	type server struct {
		network string
		addr    string
	}
	var servers []server
	for _, r := range c.Resolvers {
		if network, addr, err := ParseResolver(r); err == nil { // Validate refuses a bad one
			servers = append(servers, server{network, addr.String()})
		}
	}
	if len(servers) > 0 {
		p.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			s := servers[rand.IntN(len(servers))]
			var d net.Dialer
			return d.DialContext(ctx, s.network, s.addr)
		}}
	}
	return p, nil
}

var (
	_ query.ProtocolConfig = (*Config)(nil)
	_ query.OptionChecker  = (*Config)(nil)
)
