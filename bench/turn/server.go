package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pion/turn/v4"
	"golang.org/x/sys/unix"
)

// serve runs pion/turn's server as its multithreaded example does: one
// UDP socket per thread on one port (SO_REUSEPORT), long-term credentials,
// relay addresses on loopback.
func serve(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	realm := fs.String("realm", "gamegate.bench", "realm")
	user := fs.String("user", "bench=bench", "user=password")
	threads := fs.Int("threads", 1, "UDP sockets on the port, each read by a goroutine of its own")
	if err := fs.Parse(args); err != nil {
		return err
	}
	name, pass, ok := strings.Cut(*user, "=")
	if !ok || *threads < 1 {
		return fmt.Errorf("want -user name=password and -threads of at least 1")
	}
	key := turn.GenerateAuthKey(name, *realm, pass)
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		if err != nil {
			return err
		}
		return serr
	}}
	addr := "127.0.0.1:0"
	relays := &turn.RelayAddressGeneratorStatic{RelayAddress: net.IPv4(127, 0, 0, 1), Address: "127.0.0.1"}
	var conns []turn.PacketConnConfig
	for range *threads {
		c, err := lc.ListenPacket(context.Background(), "udp4", addr)
		if err != nil {
			return err
		}
		addr = c.LocalAddr().String()
		conns = append(conns, turn.PacketConnConfig{PacketConn: c, RelayAddressGenerator: relays})
	}
	s, err := turn.NewServer(turn.ServerConfig{
		Realm: *realm,
		AuthHandler: func(username, _ string, _ net.Addr) ([]byte, bool) {
			return key, username == name
		},
		PacketConnConfigs: conns,
	})
	if err != nil {
		return err
	}
	fmt.Println(addr)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
	return s.Close()
}
