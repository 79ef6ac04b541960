package benchutil

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The load generators run in a process of their own: this program, started
// again. In the servers' process they would share its Go scheduler and its
// CPU accounting, and the spread between rounds would be the clients' as
// much as the servers'. A package whose load runs there registers it with
// RegisterChild (in an init function); main and TestMain call Child first.

// childEnv names the child a process was started as.
const childEnv = "GAMEGATE_BENCH_CHILD"

var children = map[string]func() error{}

// RegisterChild registers run as the child called name: started by
// ChildCommand, the process runs it, with its job on the standard input
// and its result on the standard output, and exits.
func RegisterChild(name string, run func() error) {
	if _, dup := children[name]; dup {
		panic("benchutil: child " + name + " registered twice")
	}
	children[name] = run
}

// Child runs the registered child this process was started as, and exits;
// in any other process it returns at once.
func Child() {
	name := os.Getenv(childEnv)
	if name == "" {
		return
	}
	run := children[name]
	if run == nil {
		Fatal(fmt.Errorf("no child %q in this program", name))
	}
	if err := run(); err != nil {
		Fatal(err)
	}
	os.Exit(0)
}

// ChildCommand returns the command that starts this program again as the
// child called name (killed when ctx ends), its standard error this
// process's.
func ChildCommand(ctx context.Context, name string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := DieWithParent(exec.CommandContext(ctx, exe))
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// RunChild runs the child called name with job (gob-encoded on its
// standard input) and decodes its result into res. A child that has not
// ended after timeout is killed.
func RunChild(name string, timeout time.Duration, job, res any) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := ChildCommand(ctx, name)
	if err != nil {
		return err
	}
	var in, out bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(job); err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout = &in, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s process: %w", name, err)
	}
	if err := gob.NewDecoder(&out).Decode(res); err != nil {
		return fmt.Errorf("%s process: %w", name, err)
	}
	return nil
}

// ServeChild is the child's side of RunChild: it decodes the job from the
// standard input, runs it and encodes its result on the standard output.
func ServeChild[J, R any](run func(J) (R, error)) func() error {
	return func() error {
		var j J
		if err := gob.NewDecoder(os.Stdin).Decode(&j); err != nil {
			return err
		}
		r, err := run(j)
		if err != nil {
			return err
		}
		return gob.NewEncoder(os.Stdout).Encode(r)
	}
}

// A stepped load generator lets its caller measure the servers' CPU time
// over the measuring alone, not over its setup (allocations, bindings) or
// its wait for late answers. It speaks in lines on its standard input and
// output:
//
//	generator: ready        set up, waiting
//	caller:    go           start measuring
//	generator: stopped      stopped sending
//	generator: {...}        its result, one line of JSON; then it exits
//
// bench/turn's generator speaks it too (it is a module of its own and
// cannot import this package): keep the two alike.

// RunStepped runs cmd, a stepped load generator, and decodes its result
// into res; cpu is read when it is told to go and when it says it
// stopped, and their difference returned. A generator that has not ended
// after timeout is killed.
func RunStepped(cmd *exec.Cmd, timeout time.Duration, cpu func() (time.Duration, error), res any) (time.Duration, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	killed := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	defer killed.Stop()
	used, err := stepped(bufio.NewReader(stdout), stdin, cpu, res)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("%s: %w", cmd.Path, err)
	}
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("%s: %w", cmd.Path, err)
	}
	return used, nil
}

func stepped(out *bufio.Reader, in io.WriteCloser, cpu func() (time.Duration, error), res any) (time.Duration, error) {
	defer in.Close()
	if err := expectLine(out, "ready"); err != nil {
		return 0, err
	}
	cpu0, err := cpu()
	if err != nil {
		return 0, err
	}
	if _, err := io.WriteString(in, "go\n"); err != nil {
		return 0, err
	}
	if err := expectLine(out, "stopped"); err != nil {
		return 0, err
	}
	cpu1, err := cpu()
	if err != nil {
		return 0, err
	}
	line, err := out.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("reading the result: %w", err)
	}
	if err := json.Unmarshal(line, res); err != nil {
		return 0, fmt.Errorf("the result: %w", err)
	}
	return cpu1 - cpu0, nil
}

func expectLine(r *bufio.Reader, want string) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for %q: %w", want, err)
	}
	if got := strings.TrimSpace(line); got != want {
		return fmt.Errorf("said %q, want %q", got, want)
	}
	return nil
}

// Stepper is the generator's side of RunStepped.
type Stepper struct {
	in  *bufio.Reader
	out io.Writer
}

// NewStepper speaks for a generator on the standard input and output.
func NewStepper() *Stepper { return &Stepper{in: bufio.NewReader(os.Stdin), out: os.Stdout} }

// Ready says the generator is set up and waits to be told to go.
func (s *Stepper) Ready() error {
	if _, err := io.WriteString(s.out, "ready\n"); err != nil {
		return err
	}
	return expectLine(s.in, "go")
}

// Stopped says the generator stopped sending.
func (s *Stepper) Stopped() error {
	_, err := io.WriteString(s.out, "stopped\n")
	return err
}

// Result writes the generator's result, the last line.
func (s *Stepper) Result(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.out.Write(append(b, '\n'))
	return err
}

// ProcessCPUOf returns the CPU time (user and system, every thread) the
// process pid has used so far, from /proc/<pid>/stat: the servers that
// run in a process of their own (coturn, the C server) are measured so.
func ProcessCPUOf(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command's name, in parentheses, may hold spaces: fields count
	// from after its closing one. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * (time.Second / 100), nil
}

// SelfCPU is ProcessCPU with the signature ProcessCPUOf's callers share.
func SelfCPU() (time.Duration, error) { return ProcessCPU(), nil }

// StartAnnounced starts cmd, a server that prints the loopback address it
// serves on its first line, and returns that address. A server that says
// nothing of the kind within 10 seconds is killed.
func StartAnnounced(cmd *exec.Cmd) (string, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	var addr string
	select {
	case addr = <-line:
	case <-time.After(10 * time.Second):
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", fmt.Errorf("%s did not say its address (%q)", cmd.Path, addr)
	}
	return addr, nil
}
