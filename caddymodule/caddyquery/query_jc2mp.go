package caddyquery

import "github.com/gamegate/gamegate/handlers/gamespy3"

// Just Cause 2 Multiplayer's GameSpy 3 variant: see gamespy3.JC2MPConfig.
func init() { RegisterQueryProtocol[gamespy3.JC2MPConfig]("jc2mp") }
