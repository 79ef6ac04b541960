package testutil

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FreecivServerPath is where Debian's freeciv-server package installs the
// server; scripts/test installs the package when it is missing.
const FreecivServerPath = "/usr/games/freeciv-server"

// StartFreeciv runs a real Freeciv server on a free loopback port until the
// test ends and returns its address. The server refuses to run as root, so
// under root it runs as nobody (uid 65534). A missing server fails the test
// with the command that installs it.
func StartFreeciv(t testing.TB) string { return startFreeciv(t, "") }

// StartFreecivAnnouncing is StartFreeciv with the server announcing itself
// for the LAN query, to group (FREECIV_MULTICAST_GROUP; a loopback address
// keeps the test on loopback). The LAN ports are the protocol's fixed 4555
// and 4556, so one such server runs at a time on a machine: it first takes
// LockFreecivLAN, which it holds until the test ends.
func StartFreecivAnnouncing(t testing.TB, group string) string {
	t.Helper()
	LockFreecivLAN(t)
	return startFreeciv(t, group)
}

// LockFreecivLAN waits (up to ten minutes) until no other test process on
// this machine uses the Freeciv LAN ports 4555 and 4556, and reserves them
// for this test until it ends. The reservation is an flock on a file in
// os.TempDir(), so concurrent runs of the suite wait for each other instead
// of failing with "address in use"; the kernel releases it if the process
// dies.
func LockFreecivLAN(t testing.TB) {
	t.Helper()
	lockMachineWide(t, "gamegate-freeciv-lan.lock", "the Freeciv LAN ports")
}

func startFreeciv(t testing.TB, group string) string {
	t.Helper()
	if _, err := os.Stat(FreecivServerPath); err != nil {
		t.Fatalf("%s is missing: run scripts/test (it installs Debian's freeciv-server), or apt-get install freeciv-server", FreecivServerPath)
	}
	// Not t.TempDir: its parent is private to this user, and under root the
	// server runs as nobody, which must reach its working directory.
	dir, err := os.MkdirTemp("", "gamegate-freeciv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	saves, home := filepath.Join(dir, "saves"), filepath.Join(dir, "home")
	for _, d := range []string{saves, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := FreeTCPAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"--port", port, "--bind", "127.0.0.1", "--saves", saves}
	env := append(os.Environ(), "HOME="+home)
	if group != "" {
		args = append(args, "--Announce", "IPv4")
		env = append(env, "FREECIV_MULTICAST_GROUP="+group)
	}
	cmd := exec.Command(FreecivServerPath, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	exited := startPeer(t, cmd, &out, dir, saves, home)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			// An announcing server answers LAN requests once it has bound
			// the request port; one sent before that is lost.
			if group == "" || udpPortBound(freecivLANRequestPort) {
				return addr
			}
		}
		select {
		case <-exited:
			t.Fatalf("freeciv-server exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("freeciv-server did not listen on %s (and, announcing, on UDP port %d) within 20 s:\n%s", addr, freecivLANRequestPort, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FreecivVersion is the version of the installed freeciv-server, as it
// reports it ("3.0.6"), so tests compare with what is installed rather than
// with one distribution's package.
func FreecivVersion(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(FreecivServerPath, "--version").CombinedOutput() // it prints to stderr
	if err != nil {
		t.Fatalf("%s --version: %v", FreecivServerPath, err)
	}
	fields := bytes.Fields(out)
	if len(fields) < 3 || string(fields[0]) != "Freeciv" || string(fields[1]) != "version" {
		t.Fatalf("%s --version printed %q, want \"Freeciv version X.Y.Z\"", FreecivServerPath, out)
	}
	return string(fields[2])
}

// freecivLANRequestPort is the protocol's fixed port for LAN requests
// (wire/freeciv.LANRequestPort: testutil cannot import wire/freeciv, whose
// tests import testutil).
const freecivLANRequestPort = 4555

// udpPortBound reports whether some socket on this machine is bound to UDP
// port port.
func udpPortBound(port int) bool {
	suffix := fmt.Sprintf(":%04X", port)
	for _, file := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address ...
			if f := strings.Fields(line); len(f) > 1 && strings.HasSuffix(f[1], suffix) {
				return true
			}
		}
	}
	return false
}
