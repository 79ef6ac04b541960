package caddyquery

import "github.com/gamegate/gamegate/handlers/gamespy1"

// The GameSpy 1 query: see gamespy1.Config.
func init() { RegisterQueryProtocol[gamespy1.Config]("gamespy1") }
