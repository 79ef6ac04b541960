package testutil

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireDebianPeer fails the test when the program at path (from Debian's
// package pkg) is missing and the machine could install it, naming the
// command that does; it skips the test only when there is no apt-get to
// install it with.
func RequireDebianPeer(t testing.TB, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("%s is missing and this machine has no apt-get to install Debian's %s", path, pkg)
	}
	t.Fatalf("%s is missing: run scripts/peers (it installs Debian's %s)", path, pkg)
}

// PeersDir returns the absolute path of tests/peers, the npm project of
// independent clients and real servers, failing the test when its packages
// are not installed and skipping it only when there is no Node.js.
func PeersDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "tests", "peers")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is missing: the npm peers in tests/peers (gamedig, minecraft-protocol…) need Node.js and npm")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("tests/peers/node_modules is missing: run scripts/peers (npm ci in tests/peers)")
	}
	return dir
}

// NpmVersion returns the installed version of an npm package in tests/peers.
func NpmVersion(t testing.TB, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(PeersDir(t), "node_modules", pkg, "package.json"))
	if err != nil {
		t.Fatalf("%s is not installed in tests/peers: run scripts/peers", pkg)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil || p.Version == "" {
		t.Fatalf("%s/package.json: no version (%v)", pkg, err)
	}
	return p.Version
}

// RunNode runs a script of tests/peers (or a package's bin, given as a path
// below tests/peers) with node, bounded by timeout, and returns its standard
// output; a failure fails the test with what it printed.
func RunNode(t testing.TB, timeout time.Duration, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dir := PeersDir(t)
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v\nstdout: %s\nstderr: %s", script, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

// Gamedig runs GameDig's command-line client against host:port as game
// type kind and returns its JSON answer.
func Gamedig(t testing.TB, kind, address string, into any) []byte {
	t.Helper()
	out := RunNode(t, 30*time.Second, "node_modules/gamedig/bin/gamedig.js", "--type", kind, address)
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("gamedig --type %s %s printed %s: %v", kind, address, out, err)
	}
	return out
}

// StartNodeServer runs a server script of tests/peers with node until the
// test ends, and returns once it prints a line starting with "ready".
func StartNodeServer(t testing.TB, script string, args ...string) {
	t.Helper()
	dir := PeersDir(t)
	cmd := exec.Command("node", append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	exited := make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready <- true
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("node %s exited at start:\n%s", script, errb.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("node %s did not print ready within 60 s:\n%s", script, errb.String())
	}
}

// startPeer starts cmd, a real game server, in its own process group with
// its output in out; when the tests run as root it runs as nobody, who is
// given dirs. The server is stopped (SIGTERM, then SIGKILL after 5 s) when
// the test ends. The channel returned closes when the process exits.
func startPeer(t testing.TB, cmd *exec.Cmd, out *bytes.Buffer, dirs ...string) <-chan struct{} {
	t.Helper()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		const nobody = 65534
		for _, d := range dirs {
			if err := os.Chown(d, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	return exited
}
