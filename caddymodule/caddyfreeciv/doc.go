// Package caddyfreeciv registers the Freeciv guard (a layer4 handler) and
// the freeciv game query protocol.
package caddyfreeciv
