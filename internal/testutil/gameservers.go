package testutil

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Where Debian's packages install the real servers below; scripts/peers
// installs them.
const (
	MurmurPath    = "/usr/sbin/murmurd"
	OpenTTDPath   = "/usr/games/openttd"
	TeeworldsPath = "/usr/games/teeworlds-server"
)

// peerDir makes a temporary folder for a real server, removed when the
// test ends.
func peerDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gamegate-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitPeer polls ready until it holds, failing the test with the server's
// output when the server exits first or the bound passes.
func waitPeer(t testing.TB, name string, exited <-chan struct{}, out *bytes.Buffer, bound time.Duration, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for pause := 10 * time.Millisecond; !ready(); pause = min(2*pause, 200*time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", name, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v", name, bound)
		}
		time.Sleep(pause)
	}
}

// askUDP sends req to addr and returns the first answer within timeout.
func askUDP(addr string, req []byte, timeout time.Duration) []byte {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(req); err != nil {
		return nil
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// StartMurmur runs Debian's mumble-server (Murmur) on a free loopback port
// (TCP and UDP) with a limit of users, until the test ends, and returns its
// address once it answers the UDP ping. Under root it runs as nobody.
func StartMurmur(t testing.TB, users int) string {
	t.Helper()
	RequireDebianPeer(t, MurmurPath, "mumble-server")
	dir := peerDir(t, "murmur")
	addr := FreeUDPAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	ini := fmt.Sprintf("port=%s\nhost=%s\ndatabase=%s\nusers=%d\nwelcometext=\nlogfile=\n",
		port, host, filepath.Join(dir, "m.sqlite"), users)
	if err := os.WriteFile(filepath.Join(dir, "murmur.ini"), []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(MurmurPath, "-ini", filepath.Join(dir, "murmur.ini"), "-fg")
	cmd.Dir = dir
	var out bytes.Buffer
	exited := startPeer(t, cmd, &out, dir)
	ping := []byte{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	waitPeer(t, "murmurd", exited, &out, 30*time.Second, func() bool { return len(askUDP(addr, ping, 200*time.Millisecond)) == 24 })
	return addr
}
