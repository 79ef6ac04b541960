// Package netaddr holds the host:port handling that every gamegate
// component shares: strict parsing, and resolving to addresses. Which
// client an address belongs to is package clientaddr's business.
package netaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
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
	n, err := strconv.ParseUint(p, 10, 16) // digits only: no sign
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("port %q is not in [1, 65535]", p)
	}
	return host, uint16(n), nil
}

// SplitHostOptionalPort is SplitHostPort for an address whose port may be
// left out: a host name or IP address alone (an IPv6 one without
// brackets) has port 0.
func SplitHostOptionalPort(s string) (host string, port uint16, err error) {
	host, port, err = SplitHostPort(s)
	if errors.Is(err, ErrNotHostPort) {
		if _, perr := netip.ParseAddr(s); perr == nil || IsHostName(s) {
			return s, 0, nil
		}
		return "", 0, errors.New("want host or host:port")
	}
	return host, port, err
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

// IsHostName reports whether s is a DNS host name: dot-separated labels of
// letters, digits, hyphens and underscores (SRV owners have them), each of
// 1 to 63 bytes, not starting or ending with a hyphen, 253 bytes at most,
// with an optional final dot. The last label must not be all digits
// (RFC 3696 §2), so "999.1.1.1", which looks like an IPv4 address but is
// none, is no host name either.
func IsHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.ContainsFunc(last, func(r rune) bool { return r < '0' || r > '9' })
}

// AddrPortOf returns the IP address and port of a (a *net.UDPAddr, a
// *net.TCPAddr, or anything whose String is ip:port), the IP unmapped so
// that one IPv4 client has one form on dual-stack sockets. It returns the
// zero AddrPort for an address it cannot read.
func AddrPortOf(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.UDPAddr:
		ap = a.AddrPort()
	case *net.TCPAddr:
		ap = a.AddrPort()
	case nil:
		return netip.AddrPort{}
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// ParsePrefix parses an address or a prefix (an address stands for the
// prefix of its full length), masked: an entry of a configuration's list
// of networks.
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ParsePrefixes parses the entries of the configuration option named
// option with ParsePrefix; an error names the option and the entry.
func ParsePrefixes(option string, entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		p, err := ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR or IP address", option, e)
		}
		out = append(out, p)
	}
	return out, nil
}
