package tests

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// gamegate validate provisions every module without starting it, and
// touches no network: qos_discovery's shared store (storage redis) is
// not polled, its health checks send no QoS request, until a
// configuration starts. The store and the QoS server here only count
// who reaches them; the process has exited when they are read, so
// anything it sent is already queued on them.
func TestValidateTouchesNoNetwork(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	store, err := net.Listen("tcp", testutil.FreeTCPAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
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
`, store.Addr(), testutil.FreeTCPAddr(t), qosServer.LocalAddr())), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runGamegate(t, bin, "validate", "--config", config, "--adapter", "caddyfile"); code != 0 {
		t.Fatalf("gamegate validate: exit %d, want 0:\n%s", code, out)
	}
	_ = store.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Millisecond))
	if c, err := store.Accept(); err == nil {
		c.Close()
		t.Error("gamegate validate connected to the shared store")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
	_ = qosServer.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, from, err := qosServer.ReadFrom(make([]byte, 1500)); err == nil {
		t.Errorf("gamegate validate sent a QoS health check from %s", from)
	}
}
