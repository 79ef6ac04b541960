package testutil

import (
	"net"
	"testing"
)

// ServeTCP listens on a free loopback port until the test ends and runs
// serve on each connection in a goroutine of its own, closing the
// connection when serve returns. It returns the address.
func ServeTCP(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", FreeTCPAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}
