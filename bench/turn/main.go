// Command turn is the TURN side of gamegate's relay benchmark (bench/run,
// bench/relayload): pion/turn's server, and a load generator that relays
// messages through a TURN server (pion/turn's or coturn) with pion/turn's
// client.
//
// It is a module of its own so that pion/turn stays out of the module
// gamegate's users build (xcaddy fetches the gateway's dependencies, not
// its benchmark's). bench/run builds it and runs it as processes of their
// own:
//
//	turn server -realm R -user U=P -threads N
//	    serves TURN over UDP on a loopback port (one SO_REUSEPORT socket
//	    per thread), prints its address on a line and serves until killed;
//	turn load -server ADDR -realm R -user U -pass P -hops 2|1 -window 64 -size 134 -duration 2s
//	    relays messages between two clients: both with an allocation
//	    (-hops 2: every message passes two allocations inside the server),
//	    or one with an allocation and the other a plain UDP socket (-hops 1);
//	turn version
//	    prints the version of pion/turn it was built with.
//
// The load generator speaks bench/internal/benchutil's stepped exchange
// on its standard input and output (ready; go; stopped; its result as one
// line of JSON), so that its caller reads the server's CPU time over the
// measuring alone.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: turn server|load|version [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	case "version":
		err = version()
	default:
		err = fmt.Errorf("no command %q: want server, load or version", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "turn:", err)
		os.Exit(1)
	}
}

// version prints the version of pion/turn this program was built with.
func version() error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("no build information")
	}
	for _, m := range info.Deps {
		if m.Path == "github.com/pion/turn/v4" {
			fmt.Println(m.Version)
			return nil
		}
	}
	return fmt.Errorf("not built with pion/turn")
}
