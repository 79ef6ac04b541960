package caddyquery

import "github.com/gamegate/gamegate/handlers/gamespy3"

// The GameSpy 3 and 4 query: see gamespy3.Config.
func init() { RegisterQueryProtocol[gamespy3.Config]("gamespy3") }
