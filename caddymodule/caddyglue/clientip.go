package caddyglue

import (
	"net/http"
	"net/netip"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/netaddr"
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

// ParsePrefix parses an address or a prefix (netaddr.ParsePrefix).
func ParsePrefix(s string) (netip.Prefix, error) { return netaddr.ParsePrefix(s) }
