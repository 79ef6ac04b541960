package caddyquery

import "github.com/gamegate/gamegate/handlers/ase"

// The All-Seeing-Eye server query: see ase.Config.
func init() { RegisterQueryProtocol[ase.Config]("ase") }
