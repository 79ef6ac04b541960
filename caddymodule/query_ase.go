package caddymodule

import "github.com/gamegate/gamegate/handlers/ase"

// The All-Seeing-Eye server query: see ase.Config.
func init() { registerQueryProtocol[ase.Config]("ase") }
