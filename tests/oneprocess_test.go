package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// A second gamegate process on a UDP address the first serves fails to
// start, naming the address, and the first goes on answering. Without the
// check both bind it (SO_REUSEPORT) and the kernel splits the datagrams
// between them. Reloads within one process hand the address over
// (TestUDPAppReload and the other reload tests).
func TestUDPAppSecondProcessRefused(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	addr := testutil.FreeUDPAddr(t)
	config := fmt.Sprintf("{\n\tgamegate {\n\t\tudp %s {\n\t\t\tqos\n\t\t}\n\t}\n}\n", addr)
	testcaddy.Start(t, config)

	file := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(file, []byte("{\n\tadmin off\n"+strings.TrimPrefix(config, "{\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runGamegate(t, bin, "run", "--config", file, "--adapter", "caddyfile")
	if code == 0 {
		t.Fatalf("a second process on %s exited 0:\n%s", addr, out)
	}
	if !strings.Contains(out, addr) || !strings.Contains(out, "in use by another process") {
		t.Errorf("the second process's error does not name %s as in use by another process:\n%s", addr, out)
	}
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	for id := range uint16(10) {
		if !qosAnswered(c, id, 2*time.Second) {
			t.Fatalf("the first process stopped answering QoS request %d on %s", id, addr)
		}
	}
}
