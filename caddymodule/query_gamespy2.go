package caddymodule

import "github.com/gamegate/gamegate/handlers/gamespy2"

// The GameSpy 2 query: see gamespy2.Config.
func init() { registerQueryProtocol[gamespy2.Config]("gamespy2") }
