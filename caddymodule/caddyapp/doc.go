// Package caddyapp registers the gamegate app: UDP servers that serve
// datagram protocols (gamegate.udp.protocols.*) through dgram, without
// caddy-l4's association per remote address.
package caddyapp
