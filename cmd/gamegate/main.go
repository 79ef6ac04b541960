// Command gamegate is Caddy with its standard modules, caddy-l4 and every
// gamegate module: what xcaddy builds with
//
//	xcaddy build v2.11.9 --with github.com/mholt/caddy-l4@v0.1.2 --with github.com/gamegate/gamegate
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4"

	_ "github.com/gamegate/gamegate"
)

func main() {
	caddycmd.Main()
}
