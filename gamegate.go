// Package gamegate registers every gamegate Caddy module (and caddy-l4's, on
// whose layer4 app they run). It is what xcaddy imports:
//
//	xcaddy build v2.11.9 --with github.com/mholt/caddy-l4@v0.1.2 --with github.com/gamegate/gamegate
//
// generates a main package with
//
//	import _ "github.com/gamegate/gamegate"
//
// as cmd/gamegate does. See xcaddy.md.
package gamegate

import (
	// The layer4 app and its standard handlers (proxy, ...), which
	// gamegate's layer4 handlers and matchers run beside.
	_ "github.com/mholt/caddy-l4"

	// Every gamegate module, a family to a package (see caddymodule's
	// doc.go): the app and its UDP servers, HTTP handlers, layer4 handlers
	// and matchers, game query protocols, storage and commands.
	_ "github.com/gamegate/gamegate/caddymodule/caddya2s"
	_ "github.com/gamegate/gamegate/caddymodule/caddyapp"
	_ "github.com/gamegate/gamegate/caddymodule/caddycommands"
	_ "github.com/gamegate/gamegate/caddymodule/caddydiscovery"
	_ "github.com/gamegate/gamegate/caddymodule/caddyfreeciv"
	_ "github.com/gamegate/gamegate/caddymodule/caddygqp"
	_ "github.com/gamegate/gamegate/caddymodule/caddymaster"
	_ "github.com/gamegate/gamegate/caddymodule/caddyqos"
	_ "github.com/gamegate/gamegate/caddymodule/caddyquery"
	_ "github.com/gamegate/gamegate/caddymodule/caddyrelay"
	_ "github.com/gamegate/gamegate/caddymodule/caddystorage"
)
