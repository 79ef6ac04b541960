package caddymodule

import "github.com/gamegate/gamegate/handlers/openttd"

// OpenTTD's server query: see openttd.Config.
func init() { registerQueryProtocol[openttd.Config]("openttd") }
