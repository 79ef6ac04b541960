package caddyquery

import "github.com/gamegate/gamegate/handlers/minecraft"

func init() { RegisterQueryProtocol[minecraft.Config]("minecraft") }
