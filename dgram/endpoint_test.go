package dgram

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holding answers like echo, but holds each datagram until released while
// hold is set.
type holding struct {
	echo
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *holding) ServeDatagram(w *Writer, src netip.AddrPort, d []byte) {
	if g.hold.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	g.echo.ServeDatagram(w, src, d)
}

// A reload attaches the new server to the endpoint the old one serves
// through and detaches the old one: the socket stays open, detaching waits
// for the old server's batch (its replies included) and hands it nothing
// after, the new server serves every datagram from then on, and detaching
// the newest gives the address back to the one before (a configuration
// that failed to start).
func TestEndpointHandsOver(t *testing.T) {
	ep := NewEndpoint(EndpointConfig{Batch: 8})
	t.Cleanup(func() { ep.Close() })
	conn := listen(t)
	to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if _, err := ep.Add(conn); err != nil {
		t.Fatal(err)
	}
	old := &holding{echo: echo{prefix: 'x'}, entered: make(chan struct{}), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(old.release) })
	t.Cleanup(release) // before ep.Close, which waits for the reader
	oldServer := &Server{Protocols: []Protocol{old}}
	ep.Attach(oldServer)
	c := listen(t)
	defer c.Close()
	if got := roundTrip(t, c, to, []byte("x0")); string(got) != "x0" {
		t.Fatalf("before the reload: got %q", got)
	}

	old.hold.Store(true)
	if _, err := c.WriteToUDPAddrPort([]byte("x1"), to); err != nil {
		t.Fatal(err)
	}
	<-old.entered // the old server is serving x1
	next := &echo{prefix: 'x'}
	nextServer := &Server{Protocols: []Protocol{next}}
	ep.Attach(nextServer)
	detached := make(chan struct{})
	go func() {
		ep.Detach(oldServer)
		close(detached)
	}()
	if _, err := c.WriteToUDPAddrPort([]byte("x2"), to); err != nil {
		t.Fatal(err)
	}
	select {
	case <-detached:
		t.Fatal("Detach returned while the old server was still serving a datagram")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	<-detached
	buf := make([]byte, 16)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range []string{"x1", "x2"} {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("across the reload: got %q, %v; want %q", buf[:n], err, want)
		}
	}
	if o, n := old.served.Load(), next.served.Load(); o != 2 || n != 1 {
		t.Fatalf("served by the old server %d, by the new one %d; want 2 (x0, x1) and 1 (x2)", o, n)
	}
	for i := range 100 {
		if got := roundTrip(t, c, to, []byte{'x', byte(i)}); len(got) != 2 || got[1] != byte(i) {
			t.Fatalf("after the reload, datagram %d: got %q", i, got)
		}
	}
	if o, n := old.served.Load(), next.served.Load(); o != 2 || n != 101 {
		t.Fatalf("after Detach: served by the old server %d, by the new one %d; want 2 and 101", o, n)
	}

	failed := &echo{prefix: 'x'}
	failedServer := &Server{Protocols: []Protocol{failed}}
	ep.Attach(failedServer)
	ep.Detach(failedServer)
	roundTrip(t, c, to, []byte("x3"))
	if f, n := failed.served.Load(), next.served.Load(); f != 0 || n != 102 {
		t.Fatalf("after a server attached and detached again: it served %d, the one before %d; want 0 and 102", f, n)
	}
}
