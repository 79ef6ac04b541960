package testutil

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// OpenArenaServerPath is where Debian's openarena-server package installs
// the dedicated server (ioquake3 with OpenArena's data); scripts/peers
// installs it.
const OpenArenaServerPath = "/usr/games/openarena-server"

// OpenArena is a running OpenArena server.
type OpenArena struct {
	Addr     string // its UDP query address on loopback
	Hostname string // sv_hostname as set, colour codes included
	Map      string

	stop func()
}

// Stop ends the server before the test does (SIGTERM, then SIGKILL after
// 5 s) and returns once it has exited.
func (oa *OpenArena) Stop() { oa.stop() }

// StartOpenArena runs a real OpenArena dedicated server on a free loopback
// UDP port until the test ends, with the named bots (OpenArena's: Sarge,
// Grism, Major…) playing, and returns once its status lists them. Under
// root it runs as nobody.
//
// ioquake3 answers a burst of 10 queries from one address and then one a
// second, so the readiness poll asks once a second, from 127.0.0.2.
func StartOpenArena(t testing.TB, hostname string, maxClients int, bots ...string) *OpenArena {
	t.Helper()
	return startOpenArena(t, "", hostname, maxClients, bots)
}

// StartOpenArenaWithMaster is StartOpenArena for a public server (dedicated
// 2) whose only master is master (host:port on loopback): it heartbeats
// there when it starts, and every 5 minutes.
func StartOpenArenaWithMaster(t testing.TB, master, hostname string, maxClients int, bots ...string) *OpenArena {
	t.Helper()
	return startOpenArena(t, master, hostname, maxClients, bots)
}

func startOpenArena(t testing.TB, master, hostname string, maxClients int, bots []string) *OpenArena {
	t.Helper()
	RequireDebianPeer(t, OpenArenaServerPath, "openarena-server")
	dir, err := os.MkdirTemp("", "gamegate-openarena-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	oa := &OpenArena{Addr: FreeUDPAddr(t), Hostname: hostname, Map: "oa_dm1"}
	_, port, _ := net.SplitHostPort(oa.Addr)
	// ioquake3 heartbeats only as a public server (dedicated 2), to
	// sv_master1…5; all are set so that it never looks up an outside one.
	dedicated := "1"
	if master != "" {
		dedicated = "2"
	}
	args := []string{"+set", "net_ip", "127.0.0.1", "+set", "net_port", port, "+set", "net_enabled", "1", "+set", "dedicated", dedicated,
		"+set", "sv_hostname", hostname, "+set", "sv_maxclients", strconv.Itoa(maxClients),
		"+set", "sv_master1", master, "+set", "sv_master2", "", "+set", "sv_master3", "",
		"+set", "sv_master4", "", "+set", "sv_master5", "", "+map", oa.Map}
	for _, b := range bots {
		args = append(args, "+addbot", b, "1")
	}
	cmd := exec.Command(OpenArenaServerPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var out bytes.Buffer
	exited := startPeer(t, cmd, &out, dir)
	oa.stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}

	// Poll from another loopback address than the tests' clients: ioquake3
	// keeps a leaky bucket per source address (10 queries, one more a
	// second), and the poll must not use up the clients' share.
	conn, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(oa.Addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Read by hand, not with wire/quake3, whose tests use this package.
	req := []byte("\xff\xff\xff\xffgetstatus ready")
	buf := make([]byte, 65536)
	players := -1
	deadline := time.Now().Add(60 * time.Second)
	for {
		start := time.Now()
		_, _ = conn.Write(req)
		_ = conn.SetReadDeadline(start.Add(time.Second))
		if n, err := conn.Read(buf); err == nil && bytes.HasPrefix(buf[:n], []byte("\xff\xff\xff\xffstatusResponse\n")) {
			// The header line, the info string, then one line per player.
			if players = bytes.Count(buf[:n], []byte{'\n'}) - 2; players >= len(bots) {
				return oa
			}
		}
		// One query a second, answered or not.
		time.Sleep(time.Until(start.Add(time.Second)))
		select {
		case <-exited:
			t.Fatalf("openarena-server exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("openarena-server on %s did not list %d bots within 60 s (last status: %d players):\n%s", oa.Addr, len(bots), players, out.String())
		}
	}
}

// QuakestatVersion is the installed qstat's version, as quakestat -v prints
// it.
func QuakestatVersion(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("quakestat", "-v").CombinedOutput()
	if err != nil && len(out) == 0 {
		t.Fatalf("quakestat -v: %v", err)
	}
	return string(bytes.TrimSpace(out))
}
