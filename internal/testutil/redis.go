package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// RedisServerPath is where Debian's redis-server package installs the
// server; scripts/peers installs it.
const RedisServerPath = "/usr/bin/redis-server"

// Redis is a real redis-server on a leased loopback port, with no
// persistence unless asked for: a restart then starts empty.
type Redis struct {
	Addr       string // host:port on loopback
	dir        string
	appendOnly bool
	args       []string // more arguments for redis-server
	sentinel   string   // the configuration file of a Sentinel; "" for a server

	mu     sync.Mutex
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

// RedisOptions are how StartRedis runs its server.
type RedisOptions struct {
	// AppendOnly turns on the append-only file (appendfsync always), so
	// that what was written survives Stop and Start.
	AppendOnly bool
	// Args are more arguments for redis-server, such as
	// "--replicaof", "127.0.0.1", "6379".
	Args []string
}

var (
	sharedRedis     *Redis
	sharedRedisErr  error
	sharedRedisOnce sync.Once
	redisPrefixes   atomic.Int64
)

// SharedRedis returns this test binary's redis-server, starting it on
// first use; StopSharedRedis (from TestMain, after m.Run) stops it, and it
// dies with the test binary in any case. Tests sharing it keep apart by
// key prefix (RedisPrefix).
func SharedRedis(t testing.TB) *Redis {
	t.Helper()
	RequireDebianPeer(t, RedisServerPath, "redis-server")
	sharedRedisOnce.Do(func() {
		r, err := newRedis(os.TempDir(), RedisOptions{})
		if err == nil {
			addr, ferr := freeLoopbackPort()
			if ferr != nil {
				err = ferr
			} else {
				r.Addr = addr
				err = r.start()
			}
		}
		sharedRedis, sharedRedisErr = r, err
	})
	if sharedRedisErr != nil {
		t.Fatalf("starting the shared redis-server: %v", sharedRedisErr)
	}
	return sharedRedis
}

// StopSharedRedis stops the shared redis-server, if one was started.
func StopSharedRedis() {
	if sharedRedis != nil {
		sharedRedis.stop()
		os.RemoveAll(sharedRedis.dir)
	}
}

// RedisPrefix returns a key prefix no other test of this binary is given.
func RedisPrefix(t testing.TB) string {
	return fmt.Sprintf("test%d-%d", os.Getpid(), redisPrefixes.Add(1))
}

// StartRedis runs a redis-server of the test's own until the test ends,
// for tests that stop and restart it.
func StartRedis(t testing.TB, opts RedisOptions) *Redis {
	t.Helper()
	RequireDebianPeer(t, RedisServerPath, "redis-server")
	r, err := newRedis(os.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	r.startOwned(t)
	return r
}

// startOwned starts r on a leased address until the test ends.
func (r *Redis) startOwned(t testing.TB) {
	t.Helper()
	r.Addr = FreeTCPAddr(t)
	t.Cleanup(func() {
		r.stop()
		os.RemoveAll(r.dir)
	})
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the server (SIGTERM: with AppendOnly, what it acknowledged
// is on disk).
func (r *Redis) Stop(t testing.TB) {
	t.Helper()
	r.stop()
}

// Start starts the stopped server again on its address.
func (r *Redis) Start(t testing.TB) {
	t.Helper()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
}

// Pause stops the server's process without ending it (SIGSTOP): its port
// still accepts connections, and nothing answers, as a server that hangs
// or a network that drops the replies. Resume (or the test's end) continues it.
func (r *Redis) Pause(t testing.TB) {
	t.Helper()
	r.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { r.signal(t, syscall.SIGCONT) })
}

// Resume continues a paused server.
func (r *Redis) Resume(t testing.TB) {
	t.Helper()
	r.signal(t, syscall.SIGCONT)
}

func (r *Redis) signal(t testing.TB, sig syscall.Signal) {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		t.Fatal("redis-server is not running")
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
}

// Do sends one command and returns its reply's first line (for tests that
// read INFO or flush; other clients should be the code under test).
func (r *Redis) Do(t testing.TB, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", r.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("redis %s: %v", r.Addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(encodeCommand(args)); err != nil {
		t.Fatalf("redis %s: %v", r.Addr, err)
	}
	line, body, err := readReply(bufio.NewReader(c))
	if err != nil {
		t.Fatalf("redis %s %s: %v", r.Addr, args[0], err)
	}
	if body != nil {
		return string(body)
	}
	return line
}

func newRedis(tmp string, opts RedisOptions) (*Redis, error) {
	dir, err := os.MkdirTemp(tmp, "gamegate-redis-")
	if err != nil {
		return nil, err
	}
	return &Redis{dir: dir, appendOnly: opts.AppendOnly, args: opts.Args}, nil
}

// freeLoopbackPort is FreeTCPAddr for the shared server, which outlives
// every test.
func freeLoopbackPort() (string, error) {
	if p := leasedPort(); p != 0 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
	}
	return "", fmt.Errorf("no leased port left")
}

// start runs redis-server and returns once it answers PING. The process
// is started from a goroutine locked to its thread for the server's
// lifetime, so that Pdeathsig kills it when the test binary dies.
func (r *Redis) start() error {
	_, port, _ := net.SplitHostPort(r.Addr)
	args := []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--dir", r.dir,
		"--appendonly", "no", "--protected-mode", "no", "--logfile", ""}
	if r.appendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	args = append(args, r.args...)
	if r.sentinel != "" {
		args = []string{r.sentinel, "--sentinel", "--port", port, "--bind", "127.0.0.1", "--dir", r.dir,
			"--protected-mode", "no", "--logfile", ""}
	}
	out := &bytes.Buffer{}
	started := make(chan error, 1)
	exited := make(chan struct{})
	var cmd *exec.Cmd
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		cmd = exec.Command(RedisServerPath, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if os.Geteuid() == 0 {
			const nobody = 65534
			if err := os.Chown(r.dir, nobody, nobody); err != nil {
				started <- err
				close(exited)
				return
			}
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting %s: %v", RedisServerPath, err)
	}
	r.mu.Lock()
	r.cmd, r.out, r.exited = cmd, out, exited
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if pingRedis(r.Addr) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited at start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			r.stop()
			return fmt.Errorf("redis-server did not answer PING within 30 s:\n%s", out.String())
		}
		time.Sleep(pause)
	}
}

func (r *Redis) stop() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

func pingRedis(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(encodeCommand([]string{"PING"})); err != nil {
		return false
	}
	line, _, err := readReply(bufio.NewReader(c))
	// A server with a password answers too, refusing the command.
	return err == nil && line == "+PONG" || strings.HasPrefix(line, "-NOAUTH")
}

// encodeCommand is a command in the Redis protocol (RESP2).
func encodeCommand(args []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// readReply reads one reply: its first line, and for a bulk string its
// body. Arrays are not read past their header (no test needs them).
func readReply(br *bufio.Reader) (string, []byte, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return line, nil, fmt.Errorf("%s", line)
	}
	if !strings.HasPrefix(line, "$") {
		return line, nil, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return line, nil, nil
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", nil, err
	}
	return line, body[:n], nil
}
