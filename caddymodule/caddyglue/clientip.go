package caddyglue

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/internal/clientaddr"
)

// ClientIP is the caller's address as Caddy determined it (honouring
// trusted_proxies), unmapped: the clientaddr.FromRequest of every HTTP
// handler.
func ClientIP(r *http.Request) netip.Addr {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return netip.Addr{}
		}
		return a.Unmap().WithZone("")
	}
	return clientaddr.RemoteAddr(r)
}

// ParsePrefix parses an address or a prefix (an address stands for the
// prefix of its full length), masked.
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
