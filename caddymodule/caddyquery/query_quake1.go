package caddyquery

import "github.com/gamegate/gamegate/handlers/quake1"

// The QuakeWorld status query: see quake1.Config.
func init() { RegisterQueryProtocol[quake1.Config]("quake1") }
