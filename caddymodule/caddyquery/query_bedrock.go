package caddyquery

import "github.com/gamegate/gamegate/handlers/bedrock"

// Minecraft Bedrock edition's server status: see bedrock.Config.
func init() { RegisterQueryProtocol[bedrock.Config]("bedrock") }
