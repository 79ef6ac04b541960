package caddyquery

import "github.com/gamegate/gamegate/handlers/gamespy2"

// The GameSpy 2 query: see gamespy2.Config.
func init() { RegisterQueryProtocol[gamespy2.Config]("gamespy2") }
