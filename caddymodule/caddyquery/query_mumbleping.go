package caddyquery

import "github.com/gamegate/gamegate/handlers/mumbleping"

// Mumble's UDP ping: see mumbleping.Config.
func init() { RegisterQueryProtocol[mumbleping.Config]("mumbleping") }
