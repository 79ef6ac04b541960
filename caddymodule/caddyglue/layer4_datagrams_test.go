package caddyglue

import (
	"net"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// Serving a caddy-l4 association takes its read buffer and Writer from a
// pool: once the pool is warm, a new association allocates only its Conn
// (which a protocol's worker may keep after the association ends), not
// the 18 KB of room it uses.
func TestLayer4AssociationReusesItsRoom(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	reply := []byte("reply")
	to := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	serve := func() {
		a := takeAssociation(pc)
		a.w.WriteTo(reply, to)
		a.w.Flush()
		a.release()
	}
	serve()
	if testutil.Race {
		t.Skip("the race detector's sync.Pool drops what is put in it")
	}
	if allocs := testing.AllocsPerRun(100, serve); allocs > 1 {
		t.Fatalf("got %v allocations per association, want at most 1 (its Conn)", allocs)
	}
}
