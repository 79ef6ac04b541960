package tests

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// gamegate validate provisions every module without starting it, and
// touches no game server and no QoS target: qos_discovery's shared fleets
// are not read from the store, its health checks send no QoS request,
// until a configuration starts. The one exchange validate has is the
// store's own check of its address and credentials (a wrong password
// fails validate as it fails a start). Redis's MONITOR shows every
// command validate sent; the QoS server only counts who reaches it.
func TestValidateTouchesNoNetwork(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	redis := testutil.StartRedis(t, testutil.RedisOptions{})
	monitor, err := net.Dial("tcp", redis.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close()
	_ = monitor.SetDeadline(time.Now().Add(60 * time.Second))
	monitored := bufio.NewReader(monitor)
	if _, err := monitor.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := monitored.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	qosServer, err := net.ListenPacket("udp", testutil.FreeUDPAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer qosServer.Close()
	config := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`{
	admin off
	storage redis {
		address %s
	}
}

http://%s {
	qos_discovery {
		fleet f {
			server eu 1 %s
		}
		health_check {
			interval 100ms
		}
	}
}
`, redis.Addr, testutil.FreeTCPAddr(t), qosServer.LocalAddr())), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runGamegate(t, bin, "validate", "--config", config, "--adapter", "caddyfile"); code != 0 {
		t.Fatalf("gamegate validate: exit %d, want 0:\n%s", code, out)
	}
	// Redis's MONITOR shows commands in the order it ran them: once the
	// marker sent after validate exited shows, every command of validate
	// has been seen.
	const marker = "validate-has-exited"
	redis.Do(t, "ECHO", marker)
	var commands []string
	for {
		line, err := monitored.ReadString('\n')
		if err != nil {
			t.Fatalf("reading MONITOR: %v (seen %q)", err, commands)
		}
		if strings.Contains(line, marker) {
			break
		}
		commands = append(commands, strings.TrimSpace(line))
	}
	sawPing := false
	for _, c := range commands {
		sawPing = sawPing || strings.Contains(c, `"PING"`) || strings.Contains(c, `"ping"`)
		if strings.Contains(c, "gamegate/discovery/") {
			t.Errorf("gamegate validate read the shared fleets: %s", c)
		}
	}
	if !sawPing {
		t.Errorf("gamegate validate did not check the store (commands seen: %q)", commands)
	}
	_ = qosServer.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, from, err := qosServer.ReadFrom(make([]byte, 1500)); err == nil {
		t.Errorf("gamegate validate sent a QoS health check from %s", from)
	}
}
