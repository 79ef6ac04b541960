// Package cserver builds and runs the C baseline of the UDP workloads
// (c/echo.c): one thread per socket, every socket bound to one loopback
// port with SO_REUSEPORT, recvmmsg and sendmmsg batches of 32. It answers
// QoS requests as gamegate's QoS echo does, or echoes every datagram: what
// the kernel allows a UDP server on this machine, without a runtime.
//
// It is built with the system's C compiler (cc) when a workload needs it;
// where there is none, Build says so and the workloads go on without it.
package cserver

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
)

//go:embed c/echo.c
var source []byte

// ErrNoCompiler is Build's error where no C compiler is installed.
var ErrNoCompiler = errors.New("no C compiler (cc) installed: the C server is left out")

// Modes of the server.
const (
	QoS  = "qos"  // answers QoS requests (wire/qos) as gamegate's QoS echo does
	Echo = "echo" // sends every datagram back as it came
)

// Build compiles the server into dir and returns the program's path, or
// ErrNoCompiler.
func Build(dir string) (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", ErrNoCompiler
	}
	src, bin := filepath.Join(dir, "echo.c"), filepath.Join(dir, "c-echo")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(cc, "-O2", "-Wall", "-pthread", "-o", bin, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cc: %w\n%s", err, out)
	}
	return bin, nil
}

// Server is a running C server.
type Server struct {
	Addr string // the loopback address it serves
	cmd  *exec.Cmd
}

// Start runs the program bin builds serving in mode with threads threads
// (each on a socket of its own) and returns once its port is bound.
func Start(bin, mode string, threads int) (*Server, error) {
	cmd := benchutil.DieWithParent(exec.Command(bin, "-m", mode, "-t", strconv.Itoa(threads)))
	addr, err := benchutil.StartAnnounced(cmd)
	if err != nil {
		return nil, err
	}
	return &Server{Addr: addr, cmd: cmd}, nil
}

// CPU returns the CPU time the server has used so far.
func (s *Server) CPU() (time.Duration, error) { return benchutil.ProcessCPUOf(s.cmd.Process.Pid) }

// Close stops the server.
func (s *Server) Close() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// BuildTemp builds the server into a new temporary directory, which
// cleanup removes. Where the server cannot be built it returns an empty
// path and, in note, why: the workloads then go on without it.
func BuildTemp() (bin, note string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gamegate-cserver")
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin, err = Build(dir)
	if errors.Is(err, ErrNoCompiler) {
		return "", err.Error(), cleanup, nil
	}
	if err != nil {
		cleanup()
		return "", "", nil, err
	}
	return bin, "", cleanup, nil
}
