package caddyquery

import "github.com/gamegate/gamegate/handlers/battlefield"

// The Frostbite query: see battlefield.Config.
func init() { RegisterQueryProtocol[battlefield.Config]("battlefield") }
