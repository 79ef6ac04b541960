// Package netaddr holds the address handling that every gamegate component
// shares: strict host:port parsing, resolving a host:port to one address,
// and the client key under which per-client limits, quotas and lockouts are
// kept.
package netaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// ErrNotHostPort is returned for text that is not of the form host:port.
var ErrNotHostPort = errors.New("want host:port")

// ErrNoHost is returned for host:port text with an empty host.
var ErrNoHost = errors.New("the host is missing")

// SplitHostPort splits "host:port" (an IPv6 host in brackets) into a host,
// which must not be empty, and a decimal port in [1, 65535]. Errors are
// ErrNotHostPort, ErrNoHost, or one naming the port.
func SplitHostPort(s string) (host string, port uint16, err error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, ErrNotHostPort
	}
	if host == "" {
		return "", 0, ErrNoHost
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not in [1, 65535]", p)
	}
	return host, uint16(n), nil
}

// LookupHost returns the addresses of host (an IP address is its own),
// unmapped, or an error if there are none.
func LookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no address for %s", host)
	}
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// Resolve parses hostport as SplitHostPort does and returns the first
// address of its host with its port.
func Resolve(ctx context.Context, hostport string) (netip.AddrPort, error) {
	host, port, err := SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, err
	}
	addrs, err := LookupHost(ctx, host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolving %s: %w", host, err)
	}
	return netip.AddrPortFrom(addrs[0], port), nil
}

// ClientPrefix is the unit in which gamegate counts a client: an IPv4
// address (a /32), or the /64 of an IPv6 address, the block one subscriber
// holds under the usual allocation plans, whose host part is the client's
// to vary. IPv4-mapped IPv6 addresses count as IPv4; zones are dropped.
func ClientPrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// ClientKey is ClientPrefix as text: the IPv4 address alone ("192.0.2.1"),
// or the IPv6 prefix ("2001:db8::/64").
func ClientKey(a netip.Addr) string {
	p := ClientPrefix(a)
	if p.Addr().Is4() {
		return p.Addr().String()
	}
	return p.String()
}
