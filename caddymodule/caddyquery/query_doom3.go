package caddyquery

import "github.com/gamegate/gamegate/handlers/doom3"

// The id Tech 4 server query: see doom3.Config.
func init() { RegisterQueryProtocol[doom3.Config]("doom3") }
