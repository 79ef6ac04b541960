package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/certmagic"

	"github.com/gamegate/gamegate/internal/testutil"
)

// Storage locks between processes: each node is this test binary run
// again as a child (lockNodeEnv says which part), loading caddy.storage.redis
// through Caddy's module system as a gamegate process does.

const lockNodeEnv = "GAMEGATE_TEST_LOCK_NODE"

// lockNodeStorage provisions caddy.storage.redis from the child's
// environment.
func lockNodeStorage(t *testing.T) certmagic.Storage {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	raw, _ := json.Marshal(map[string]any{
		"address":     []string{os.Getenv("GAMEGATE_TEST_LOCK_REDIS")},
		"key_prefix":  os.Getenv("GAMEGATE_TEST_LOCK_PREFIX"),
		"lock_expiry": int64(2 * time.Second),
	})
	m, err := ctx.LoadModuleByID("caddy.storage.redis", raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.(caddy.StorageConverter).CertMagicStorage()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClusterLockNode is a child's part; it runs only as a child.
func TestClusterLockNode(t *testing.T) {
	part := os.Getenv(lockNodeEnv)
	if part == "" {
		t.Skip("a child process of TestClusterStorageLock")
	}
	s := lockNodeStorage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	switch part {
	case "contend":
		// Take the lock 20 times; inside, claim a file no other holder may
		// hold at the same time.
		claim := filepath.Join(os.Getenv("GAMEGATE_TEST_LOCK_DIR"), "holder")
		for i := range 20 {
			if err := s.Lock(ctx, "cluster/issue"); err != nil {
				t.Fatalf("Lock %d: %v", i, err)
			}
			f, err := os.OpenFile(claim, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatalf("turn %d: another process holds the lock too: %v", i, err)
			}
			f.Close()
			time.Sleep(2 * time.Millisecond) // the critical section
			if err := os.Remove(claim); err != nil {
				t.Fatal(err)
			}
			if err := s.Unlock(ctx, "cluster/issue"); err != nil {
				t.Fatalf("Unlock %d: %v", i, err)
			}
		}
	case "hold":
		if err := s.Lock(ctx, "cluster/dead"); err != nil {
			t.Fatal(err)
		}
		fmt.Println("held")
		<-ctx.Done() // until killed
	case "take":
		tl := s.(certmagic.TryLocker)
		if ok, err := tl.TryLock(ctx, "cluster/dead"); ok || err != nil {
			t.Fatalf("TryLock of a lock another process holds: %v, %v", ok, err)
		}
		fmt.Println("refused")
		if err := s.Lock(ctx, "cluster/dead"); err != nil {
			t.Fatalf("Lock after the holder died: %v", err)
		}
		fmt.Println("taken")
	}
}

// lockNode starts a child for part.
func lockNode(t *testing.T, part, redisAddr, prefix, dir string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterLockNode$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockNodeEnv+"="+part, "GAMEGATE_TEST_LOCK_REDIS="+redisAddr,
		"GAMEGATE_TEST_LOCK_PREFIX="+prefix, "GAMEGATE_TEST_LOCK_DIR="+dir)
	errs := &strings.Builder{}
	cmd.Stderr = errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out), errs
}

// waitLine reads the child's output until a line equal to want, or fails.
func waitLine(t *testing.T, sc *bufio.Scanner, want string, errs *strings.Builder) {
	t.Helper()
	done := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			if sc.Text() == want {
				done <- true
				return
			}
		}
		done <- false
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("the child ended before printing %q:\n%s", want, errs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the child did not print %q within 60 s", want)
	}
}

// Two processes contend for one storage lock: only one holds it at a
// time. A process that dies holding a lock leaves it to the other once it
// expires (lock_expiry 2s).
func TestClusterStorageLock(t *testing.T) {
	if os.Getenv(lockNodeEnv) != "" {
		t.Skip("the parent's part")
	}
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	dir := t.TempDir()

	var nodes []*exec.Cmd
	var logs []*strings.Builder
	for range 2 {
		cmd, sc, errs := lockNode(t, "contend", r.Addr, prefix, dir)
		go func() {
			for sc.Scan() {
			}
		}()
		nodes, logs = append(nodes, cmd), append(logs, errs)
	}
	for i, cmd := range nodes {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("contending process %d: %v\n%s", i, err, logs[i].String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "holder")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the claim file is left: %v", err)
	}

	holder, hsc, herrs := lockNode(t, "hold", r.Addr, prefix, dir)
	waitLine(t, hsc, "held", herrs)
	taker, tsc, terrs := lockNode(t, "take", r.Addr, prefix, dir)
	waitLine(t, tsc, "refused", terrs)
	if err := syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitLine(t, tsc, "taken", terrs)
	if err := taker.Wait(); err != nil {
		t.Fatalf("the taking process: %v\n%s", err, terrs.String())
	}
}
