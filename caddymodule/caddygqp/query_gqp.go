package caddygqp

import (
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/gqp"
)

func init() { caddyquery.RegisterQueryProtocol[gqp.QueryConfig]("gqp") }
