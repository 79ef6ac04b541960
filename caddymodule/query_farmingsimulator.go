package caddymodule

import "github.com/gamegate/gamegate/handlers/farmingsimulator"

// The Farming Simulator statistics feed query: see farmingsimulator.Config.
func init() { registerQueryProtocol[farmingsimulator.Config]("farmingsimulator") }
