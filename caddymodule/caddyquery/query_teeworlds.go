package caddyquery

import "github.com/gamegate/gamegate/handlers/teeworlds"

// Teeworlds 0.7's server info query: see teeworlds.Config.
func init() { RegisterQueryProtocol[teeworlds.Config]("teeworlds") }
