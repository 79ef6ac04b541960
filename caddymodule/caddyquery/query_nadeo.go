package caddyquery

import "github.com/gamegate/gamegate/handlers/nadeo"

// The Nadeo (GbxRemote) query: see nadeo.Config.
func init() { RegisterQueryProtocol[nadeo.Config]("nadeo") }
