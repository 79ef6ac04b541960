// Package clientaddr says which client an address belongs to, for limits
// kept per client (request rates, quotas, lockouts).
//
// An IPv4 address is one client. An IPv6 address is not: one subscriber
// usually holds a /64 (and often a /56 or /48), whose host bits are theirs to
// vary at will, so a limit per IPv6 address would be no limit at all. An IPv6
// client is therefore its prefix of a configured length, /64 by default.
package clientaddr

import (
	"fmt"
	"net/http"
	"net/netip"
)

// FromRequest gives the address of the client that sent an HTTP request:
// what the server determined (Caddy honours its trusted_proxies), else
// RemoteAddr's. The invalid Addr means unknown. Every HTTP handler takes
// its clients' addresses in this one form.
type FromRequest func(*http.Request) netip.Addr

// RemoteAddr is the address of r.RemoteAddr, unmapped and without a zone:
// the client when no proxy in front says otherwise. The invalid Addr if
// RemoteAddr holds none.
func RemoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// unknown is the key of every client whose address is unknown.
const unknown = "unknown"

// DefaultIPv6Prefix is the prefix length, in bits, that makes one IPv6
// client when none is configured: the /64 one subscriber holds at the
// least.
const DefaultIPv6Prefix = 64

// MinIPv6Prefix and MaxIPv6Prefix bound a configured prefix length: a /32 is
// a whole provider's allocation, and /128 keys by the full address.
const (
	MinIPv6Prefix = 32
	MaxIPv6Prefix = 128
)

// ValidateIPv6Prefix checks a configured IPv6 client prefix length; 0 means
// DefaultIPv6Prefix. name is the option's name for the error message.
func ValidateIPv6Prefix(name string, bits int) error {
	if bits == 0 || bits >= MinIPv6Prefix && bits <= MaxIPv6Prefix {
		return nil
	}
	return fmt.Errorf("%s %d: must be a prefix length in [%d, %d] (0: /%d)", name, bits, MinIPv6Prefix, MaxIPv6Prefix, DefaultIPv6Prefix)
}

// Key is the client a of which is one address: an IPv4 address (also when
// written as IPv4-mapped IPv6) as a /32, or the /ipv6Bits prefix of an IPv6
// address (0 means DefaultIPv6Prefix), without any zone. The invalid
// address gives the zero Prefix.
func Key(a netip.Addr, ipv6Bits int) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = ipv6Bits
		if bits == 0 {
			bits = DefaultIPv6Prefix
		}
	}
	p, _ := a.Prefix(bits)
	return p
}

// KeyString is Key written as text: "192.0.2.1" for IPv4 and
// "2001:db8::/64" for IPv6; "unknown" for the invalid address.
func KeyString(a netip.Addr, ipv6Bits int) string {
	if !a.IsValid() {
		return unknown
	}
	k := Key(a, ipv6Bits)
	if k.Addr().Is4() {
		return k.Addr().String()
	}
	return k.String()
}

// Networks aggregate clients for limits that one holder of many addresses
// must not multiply: an IPv4 /24 (the smallest block routed on the
// internet, so one that a holder of many addresses has whole) and an IPv6
// /48 (a site's usual assignment: 65,536 /64s) by default.
const (
	DefaultNetworkIPv4Prefix = 24
	DefaultNetworkIPv6Prefix = 48
	MinNetworkIPv4Prefix     = 8
	MaxNetworkIPv4Prefix     = 32
)

// ValidateNetworkIPv4Prefix checks a configured IPv4 network prefix length;
// 0 means DefaultNetworkIPv4Prefix. name is the option's name for the error
// message.
func ValidateNetworkIPv4Prefix(name string, bits int) error {
	if bits == 0 || bits >= MinNetworkIPv4Prefix && bits <= MaxNetworkIPv4Prefix {
		return nil
	}
	return fmt.Errorf("%s %d: must be a prefix length in [%d, %d] (0: /%d)", name, bits, MinNetworkIPv4Prefix, MaxNetworkIPv4Prefix, DefaultNetworkIPv4Prefix)
}

// Network is the network a is in: its /ipv4Bits prefix for an IPv4 address
// (also when written as IPv4-mapped IPv6; 0 means DefaultNetworkIPv4Prefix),
// its /ipv6Bits prefix for an IPv6 address (0 means
// DefaultNetworkIPv6Prefix). The invalid address gives the zero Prefix.
func Network(a netip.Addr, ipv4Bits, ipv6Bits int) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := ipv4Bits
	if bits == 0 {
		bits = DefaultNetworkIPv4Prefix
	}
	if a.Is6() {
		bits = ipv6Bits
		if bits == 0 {
			bits = DefaultNetworkIPv6Prefix
		}
	}
	p, _ := a.Prefix(bits)
	return p
}

// NetworkString is Network written as a prefix ("192.0.2.0/24",
// "2001:db8:1::/48"); "unknown" for the invalid address.
func NetworkString(a netip.Addr, ipv4Bits, ipv6Bits int) string {
	if !a.IsValid() {
		return unknown
	}
	return Network(a, ipv4Bits, ipv6Bits).String()
}
