package testutil

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Test ports.
//
// Caddy binds its listeners with SO_REUSEPORT, so that a new configuration
// can bind beside the old one during a reload, and the kernel then lets any
// other SO_REUSEPORT socket of the same user bind the same port: two test
// Caddys given the same port both start, and the kernel shares the port's
// connections and datagrams between them (a request answered 404 by the
// other test's server). A port found by binding port 0 and closing the
// socket is free only for a moment: the next bind of port 0, in this test
// binary or in another running at the same time, may get it again.
//
// So FreeTCPAddr and FreeUDPAddr hand out ports in turn from a block this
// process leases for its lifetime: a lock file per block, held with flock
// until the process exits, so concurrent test binaries (go test ./... runs
// several, and so do separate checkouts on one machine) get disjoint
// blocks. The blocks lie below the kernel's ephemeral range, which no bind
// of port 0 ever takes from. Each port is checked free for TCP and UDP
// before it is handed out; where no block can be leased (no lock directory,
// no room below the ephemeral range, every block taken) they fall back to
// binding port 0.
const (
	portBlockSize = 512
	portsFrom     = 10000
)

var ports struct {
	once sync.Once
	mu   sync.Mutex
	base int      // the first port of the leased block; 0: none leased
	next int      // the offset in the block to try next
	lock *os.File // held open: closing it releases the lease
}

// FreeTCPAddr returns a loopback address with a TCP port that is free and
// that no other caller of FreeTCPAddr or FreeUDPAddr is given while it may
// still be in use (see the comment on portBlockSize).
func FreeTCPAddr(t testing.TB) string {
	t.Helper()
	if p := leasedPort(); p != 0 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreeUDPAddr is FreeTCPAddr for a UDP port.
func FreeUDPAddr(t testing.TB) string {
	t.Helper()
	if p := leasedPort(); p != 0 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// leasedPort returns the next port of this process's block that is free
// for both TCP and UDP on loopback, or 0 if there is none.
func leasedPort() int {
	ports.once.Do(leaseBlock)
	if ports.base == 0 {
		return 0
	}
	ports.mu.Lock()
	defer ports.mu.Unlock()
	for range portBlockSize {
		p := ports.base + ports.next
		ports.next = (ports.next + 1) % portBlockSize
		if p != BedrockDefaultPort && portFree(p) {
			return p
		}
	}
	return 0
}

// portFree reports whether port can be bound on loopback for TCP and for
// UDP. The probes do not set SO_REUSEPORT, so a port a test's Caddy holds
// is never reported free.
func portFree(port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// leaseBlock takes the first block below the ephemeral range whose lock
// file no other process holds.
func leaseBlock() {
	below := ephemeralFrom()
	dir := filepath.Join(os.TempDir(), "gamegate-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return
	}
	for b := portsFrom; b+portBlockSize <= below; b += portBlockSize {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(b)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			continue
		}
		if lockExclusive(f) {
			ports.base, ports.lock = b, f
			return
		}
		f.Close()
	}
}

// ephemeralFrom returns the first port of the kernel's ephemeral range
// (Linux's default when it cannot be read).
func ephemeralFrom() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}
