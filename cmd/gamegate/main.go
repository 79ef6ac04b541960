// Command gamegate is Caddy with its standard modules, caddy-l4 and every
// gamegate module: what xcaddy builds with
//
//	xcaddy build v2.11.9 --with github.com/mholt/caddy-l4@v0.1.2 --with github.com/gamegate/gamegate
package main

import (
	"fmt"
	"os"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4"

	"github.com/gamegate/gamegate"
)

func main() {
	// `gamegate version` names gamegate's version and commit, then
	// Caddy's version line as Caddy's own `version` prints it.
	if len(os.Args) == 2 && os.Args[1] == "version" {
		_, full := caddy.Version()
		fmt.Println(gamegate.Version())
		fmt.Println("caddy " + full)
		return
	}
	caddycmd.Main()
}
