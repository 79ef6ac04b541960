package caddyquery

import "github.com/gamegate/gamegate/handlers/quake3"

// The Quake 3 family's server query: see quake3.Config.
func init() { RegisterQueryProtocol[quake3.Config]("quake3") }
