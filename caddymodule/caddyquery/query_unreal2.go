package caddyquery

import "github.com/gamegate/gamegate/handlers/unreal2"

// The Unreal Engine 2 server query: see unreal2.Config.
func init() { RegisterQueryProtocol[unreal2.Config]("unreal2") }
