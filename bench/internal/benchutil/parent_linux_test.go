//go:build linux

package benchutil

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process started with DieWithParent ends when the process that started
// it is killed: the test starts itself as a parent that starts sleep, kills
// the parent with SIGKILL (no cleanup runs), and waits for sleep to end.
func TestDieWithParentEndsTheChild(t *testing.T) {
	if os.Getenv("BENCHUTIL_PARENT") != "" {
		c := DieWithParent(exec.Command("sleep", "600"))
		if err := c.Start(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
		select {}
	}
	parent := exec.Command(os.Args[0], "-test.run", "^TestDieWithParentEndsTheChild$")
	parent.Env = append(os.Environ(), "BENCHUTIL_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the parent said no pid: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	if pid <= 0 {
		t.Fatalf("pid %q", line)
	}
	_ = parent.Process.Signal(syscall.SIGKILL)
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(b), ") Z ") {
			return // ended, waiting for its new parent to reap it
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("sleep (pid %d) outlived its parent by 10s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
