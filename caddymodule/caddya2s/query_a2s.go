package caddya2s

import (
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/a2s"
)

func init() { caddyquery.RegisterQueryProtocol[a2s.Config]("a2s") }
