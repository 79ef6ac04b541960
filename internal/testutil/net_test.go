//go:build unix

package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// leaseChildEnv makes the test binary, started again by
// TestPortBlocksAreDisjoint, print its own block and exit.
const leaseChildEnv = "GAMEGATE_TEST_PORT_LEASE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(leaseChildEnv) == "1" {
		leasedPort()
		fmt.Printf("block %d\n", ports.base)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func leasedOrSkip(t *testing.T) {
	t.Helper()
	if leasedPort(); ports.base == 0 {
		t.Skip("no port block could be leased here (no lock directory or no room below the ephemeral range)")
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Ports are handed out in turn, never twice in one pass over the block, and
// never from the ephemeral range.
func TestFreeAddrsDistinct(t *testing.T) {
	leasedOrSkip(t)
	seen := map[int]bool{}
	for i := range 200 {
		addr := FreeTCPAddr(t)
		if i%2 == 1 {
			addr = FreeUDPAddr(t)
		}
		p := portOf(t, addr)
		if seen[p] {
			t.Fatalf("port %d handed out twice in 200 calls", p)
		}
		seen[p] = true
		if p < ports.base || p >= ports.base+portBlockSize || p >= ephemeralFrom() {
			t.Fatalf("port %d outside the leased block %d+%d or inside the ephemeral range", p, ports.base, portBlockSize)
		}
	}
}

// A port held by an SO_REUSEPORT listener, as Caddy's are, is skipped.
func TestFreeAddrSkipsReusePortListener(t *testing.T) {
	leasedOrSkip(t)
	ports.mu.Lock()
	next := ports.base + ports.next
	ports.mu.Unlock()
	l, err := ReusePort.Listen(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(next)))
	if err != nil {
		t.Skipf("cannot hold port %d for the test: %v", next, err)
	}
	defer l.Close()
	if p := portOf(t, FreeTCPAddr(t)); p == next {
		t.Fatalf("port %d handed out while a listener holds it", p)
	}
}

// Two test binaries running at once lease different blocks.
func TestPortBlocksAreDisjoint(t *testing.T) {
	leasedOrSkip(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaseChildEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child test binary: %v", err)
	}
	var child int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "block %d", &child); err != nil {
		t.Fatalf("the child printed %q", out)
	}
	if child == 0 || child == ports.base {
		t.Fatalf("this process leased block %d, a second one %d: want two different blocks", ports.base, child)
	}
}
