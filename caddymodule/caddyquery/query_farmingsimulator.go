package caddyquery

import "github.com/gamegate/gamegate/handlers/farmingsimulator"

// The Farming Simulator statistics feed query: see farmingsimulator.Config.
func init() { RegisterQueryProtocol[farmingsimulator.Config]("farmingsimulator") }
