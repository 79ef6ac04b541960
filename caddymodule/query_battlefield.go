package caddymodule

import "github.com/gamegate/gamegate/handlers/battlefield"

// The Frostbite query: see battlefield.Config.
func init() { registerQueryProtocol[battlefield.Config]("battlefield") }
