package caddymodule

import "github.com/gamegate/gamegate/handlers/mumbleping"

// Mumble's UDP ping: see mumbleping.Config.
func init() { registerQueryProtocol[mumbleping.Config]("mumbleping") }
