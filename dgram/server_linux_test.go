//go:build linux

package dgram

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// failingIO is a socket's I/O whose first read fails with err, an error of
// the socket itself rather than of one earlier datagram.
type failingIO struct {
	packetIO
	err    error
	failed atomic.Bool
}

func (f *failingIO) read(in []message) (int, error) {
	if !f.failed.Swap(true) {
		return 0, f.err
	}
	return f.packetIO.read(in)
}

// A reader that stops on an error of its socket closes the socket: Serve
// returns the error, the server forgets the socket, the kernel hands its
// share of the port to the port's other sockets, whose readers answer
// every client, and Close closes the rest, each socket once.
func TestServeClosesFailedSocket(t *testing.T) {
	bad := listenReusePort(t, testutil.FreeUDPAddr(t))
	good := listenReusePort(t, bad.LocalAddr().String())
	s := &Server{Protocols: []Protocol{&echo{prefix: 'x'}}}
	s.newIO = func(conn *net.UDPConn, batch int) packetIO {
		if conn == bad {
			return &failingIO{packetIO: newPacketIO(conn, batch), err: syscall.EBADF}
		}
		return newPacketIO(conn, batch)
	}
	goodDone := make(chan error, 1)
	go func() { goodDone <- s.Serve(good) }()

	if err := s.Serve(bad); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Serve of the failing socket returned %v, want EBADF", err)
	}
	if _, err := bad.WriteTo([]byte("x"), bad.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("writing to the failed socket: got %v, want net.ErrClosed (left bound with no reader)", err)
	}
	s.mu.Lock()
	_, held := s.conns[bad]
	s.mu.Unlock()
	if held {
		t.Fatal("the server still holds the failed socket")
	}
	// The kernel spreads clients over the port's sockets by their address:
	// a failed socket left bound would take some clients' datagrams and
	// never answer them.
	to := good.LocalAddr().(*net.UDPAddr).AddrPort()
	for i := range 16 {
		c := listen(t)
		if got := roundTrip(t, c, to, []byte{'x', byte(i)}); len(got) != 2 || got[1] != byte(i) {
			t.Fatalf("client %d: got %q", i, got)
		}
		c.Close()
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v, want nil (each socket closed once)", err)
	}
	if err := <-goodDone; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve of the other socket returned %v, want ErrServerClosed", err)
	}
}
