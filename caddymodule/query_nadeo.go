package caddymodule

import "github.com/gamegate/gamegate/handlers/nadeo"

// The Nadeo (GbxRemote) query: see nadeo.Config.
func init() { registerQueryProtocol[nadeo.Config]("nadeo") }
