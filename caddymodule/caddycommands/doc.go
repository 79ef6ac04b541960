// Package caddycommands registers the gamegate commands that belong to no
// module family: modules.
package caddycommands
