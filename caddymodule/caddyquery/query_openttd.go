package caddyquery

import "github.com/gamegate/gamegate/handlers/openttd"

// OpenTTD's server query: see openttd.Config.
func init() { RegisterQueryProtocol[openttd.Config]("openttd") }
