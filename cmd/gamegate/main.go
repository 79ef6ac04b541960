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

// longDescription is `gamegate help`'s text, in place of Caddy's.
const longDescription = `gamegate is Caddy with its standard modules, caddy-l4 and the gamegate
modules: QoS echo and discovery, a Unity Relay server and its allocations
API, GQP, an A2S shield, a Quake 3 master, game server queries over HTTP
and a server browser.

Every Caddy subcommand works as it does in Caddy:

	- 'gamegate run --config Caddyfile' runs it in the foreground.
	- 'gamegate validate --config Caddyfile' checks a configuration
	  without starting it.
	- 'gamegate list-modules' lists every module.

gamegate adds 'modules', which lists gamegate's modules only (not all of
their IDs say gamegate), 'qos-check' and 'relay-check', which check a
deployment the way game clients use it, and prints its own version with
'version'.

Documentation: docs/README.md in the gamegate repository; Caddy's at
https://caddyserver.com/docs/`

func main() {
	// Help and usage name the gamegate binary and describe gamegate
	// (Caddy's own examples stay Caddy's, under the name it was given).
	caddy.CustomBinaryName = "gamegate"
	caddy.CustomLongDescription = longDescription
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
