package caddyquery

import "github.com/gamegate/gamegate/handlers/fivem"

// The FiveM and RedM query: see fivem.Config.
func init() { RegisterQueryProtocol[fivem.Config]("fivem") }
