package caddyquery

import "github.com/gamegate/gamegate/handlers/quake2"

// The Quake 2 status query: see quake2.Config.
func init() { RegisterQueryProtocol[quake2.Config]("quake2") }
