package relayload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// The TURN relays run in processes of their own, as they are deployed:
// coturn (Debian's turnserver) from a configuration written here, and
// pion/turn's server from bench/turn, a module of its own so that pion/turn
// stays out of the module gamegate's users build. bench/turn's load
// generator (on pion/turn's client) measures both.

// TURN credentials and realm, the same for both servers.
const (
	turnRealm = "gamegate.bench"
	turnUser  = "bench"
	turnPass  = "bench"
)

// CoturnConfig is the configuration coturn runs with, for the page: %d
// are the listening port, the relay ports' range and the relay threads,
// %s the directory of its (empty) SQLite file.
const CoturnConfig = `listening-ip=127.0.0.1
listening-port=%d
relay-ip=127.0.0.1
min-port=%d
max-port=%d
relay-threads=%d
lt-cred-mech
realm=` + turnRealm + `
user=` + turnUser + `:` + turnPass + `
no-tls
no-dtls
no-cli
allowed-peer-ip=127.0.0.1
allow-loopback-peers
no-multicast-peers
no-rfc5780
no-stun-backward-compatibility
userdb=%s/turndb
log-file=stdout
simple-log
`

// BuildTURN builds bench/turn (the repository at root) into dir and
// returns the program's path.
func BuildTURN(root, dir string) (string, error) {
	bin := filepath.Join(dir, "turn")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(root, "bench", "turn")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building bench/turn: %w\n%s", err, out)
	}
	return bin, nil
}

// startTURN starts coturn (where it is installed) and pion/turn's server
// (where cfg names bench/turn's program) and returns their targets, notes
// for the page on how they ran or why not, and the function that stops
// them.
func startTURN(cfg Config) ([]*target, []string, func(), error) {
	var targets []*target
	var notes []string
	var stops []func()
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	if cfg.TURN == "" {
		return nil, []string{"coturn and pion/turn are not measured: bench/turn was not built."}, stop, nil
	}
	// Datagrams of the relay workload's size: ChannelData's 4-byte
	// header and the data (which pion/turn's client pads to 4 bytes).
	size := wirerelay.HeaderLen + 16 + 16 + 2 + cfg.Size - 4
	threads := runtime.NumCPU()
	add := func(name, server string, addr string, cpu func() (time.Duration, error)) {
		for _, hops := range []int{2, 1} {
			label := fmt.Sprintf("%s, both clients allocated (2 hops)", server)
			if hops == 1 {
				label = fmt.Sprintf("%s, one client allocated, the peer a plain socket (1 hop)", server)
			}
			targets = append(targets, &target{name: fmt.Sprintf("%s-%d", name, hops), label: label, cpu: cpu,
				load: func(d time.Duration) *exec.Cmd {
					return benchutil.DieWithParent(exec.Command(cfg.TURN, "load", "-server", addr, "-realm", turnRealm, "-user", turnUser, "-pass", turnPass,
						"-hops", strconv.Itoa(hops), "-window", strconv.Itoa(cfg.Window), "-size", strconv.Itoa(size),
						"-duration", d.String()))
				}})
		}
	}
	if _, err := exec.LookPath("turnserver"); err != nil {
		notes = append(notes, "coturn is not measured: no turnserver installed (Debian's coturn package).")
	} else {
		c, version, err := startCoturn(threads)
		if err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("coturn: %w", err)
		}
		stops = append(stops, c.stop)
		add("coturn", "coturn "+version, c.addr, c.cpu)
		notes = append(notes, fmt.Sprintf("coturn %s ran as `turnserver -c turnserver.conf` with %d relay threads, from this "+
			"configuration (the ports chosen when it ran; users from the file, long-term credentials, no TLS or DTLS, "+
			"no CLI; loopback peers allowed, which coturn refuses by default; its default SQLite user database is an "+
			"empty file in a temporary directory):\n\n```\n%s```", version, threads,
			fmt.Sprintf(CoturnConfig, c.port, c.minPort, c.maxPort, threads, "$TMPDIR")))
	}
	p, err := startPion(cfg.TURN, threads)
	if err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("pion/turn: %w", err)
	}
	stops = append(stops, p.stop)
	out, err := exec.Command(cfg.TURN, "version").Output()
	if err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("pion/turn's version: %w", err)
	}
	pion := "pion/turn " + strings.TrimSpace(string(out))
	add("pion", pion, p.addr, p.cpu)
	notes = append(notes, fmt.Sprintf("%s (bench/turn's `turn server -threads %d`): its server as its "+
		"multithreaded example runs it, %d UDP sockets on one port (SO_REUSEPORT), the same realm and long-term "+
		"credentials. Both TURN relays are measured with bench/turn's load generator on pion/turn's client: "+
		"Allocate, CreatePermission, ChannelBind (after a warmup, every message is ChannelData), %d-byte data "+
		"(ChannelData datagrams of %d bytes, padded to %d).", pion, threads, threads, size, size+4, (size+4+3)/4*4))
	return targets, notes, stop, nil
}

// process is a relay running in a process of its own.
type process struct {
	addr                   string
	port, minPort, maxPort int
	cmd                    *exec.Cmd
	dir                    string
}

func (p *process) cpu() (time.Duration, error) { return benchutil.ProcessCPUOf(p.cmd.Process.Pid) }

func (p *process) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// startCoturn runs turnserver from CoturnConfig on a free loopback port
// (trying others if it is taken meanwhile) and returns it with coturn's
// version, once it answers.
func startCoturn(threads int) (*process, string, error) {
	out, err := exec.Command("turnserver", "--version").CombinedOutput()
	if err != nil {
		return nil, "", fmt.Errorf("turnserver --version: %w", err)
	}
	version := strings.TrimSpace(string(out))
	var lastErr error
	for range 5 {
		dir, err := os.MkdirTemp("", "gamegate-coturn")
		if err != nil {
			return nil, "", err
		}
		port, _ := strconv.Atoi(benchutil.FreeAddr("udp")[len("127.0.0.1:"):])
		minPort := 20000 + rand.IntN(200)*100 // a range of 100 relay ports
		p := &process{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, minPort: minPort, maxPort: minPort + 99, dir: dir}
		conf := filepath.Join(dir, "turnserver.conf")
		if err := os.WriteFile(conf, fmt.Appendf(nil, CoturnConfig, port, p.minPort, p.maxPort, threads, dir), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, "", err
		}
		p.cmd = benchutil.DieWithParent(exec.Command("turnserver", "-c", conf))
		log, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			os.RemoveAll(dir)
			return nil, "", err
		}
		p.cmd.Stdout, p.cmd.Stderr = log, log
		err = p.cmd.Start()
		log.Close()
		if err != nil {
			os.RemoveAll(dir)
			return nil, "", err
		}
		if lastErr = waitUDPPort(port); lastErr == nil {
			return p, version, nil
		}
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		lastErr = fmt.Errorf("%w\n%s", lastErr, tail(string(b), 2000))
		p.stop()
	}
	return nil, "", lastErr
}

// waitUDPPort waits until the loopback UDP port is bound.
func waitUDPPort(port int) error {
	hexPort := fmt.Sprintf(":%04X ", port)
	for range 100 {
		b, err := os.ReadFile("/proc/net/udp")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 1 && f[1] == "0100007F"+strings.TrimSpace(hexPort) {
				// Bound: give its threads a moment to read.
				time.Sleep(200 * time.Millisecond)
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("port %d not bound after 5s", port)
}

// startPion runs bench/turn's pion/turn server and returns it once it said
// its address.
func startPion(bin string, threads int) (*process, error) {
	p := &process{cmd: benchutil.DieWithParent(exec.Command(bin, "server", "-realm", turnRealm, "-user", turnUser+"="+turnPass, "-threads", strconv.Itoa(threads)))}
	addr, err := benchutil.StartAnnounced(p.cmd)
	if err != nil {
		return nil, err
	}
	p.addr = addr
	return p, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
