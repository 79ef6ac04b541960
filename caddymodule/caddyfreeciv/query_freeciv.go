package caddyfreeciv

import (
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/freeciv"
)

func init() { caddyquery.RegisterQueryProtocol[freeciv.QueryConfig]("freeciv") }
