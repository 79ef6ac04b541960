package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// runGamegate runs the gamegate binary with args and returns its exit
// status and combined output.
func runGamegate(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit) && exit.Exited():
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("gamegate %s: %v\n%s", strings.Join(args, " "), err, out)
	return -1, ""
}

// The exit statuses the commands document: qos-check exits 1 when a region
// got no response, relay-check when a message was lost, validate when the
// configuration is refused, each 0 otherwise; a command called wrongly
// exits 1. Each is a real run of the built binary against a real Caddy.
func TestCLIExitCodes(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
	qosAddr, relayAddr, httpAddr := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	// A relay that forwards at most 100 bytes of content: relay-check's
	// 200-byte messages are all dropped, its 64-byte ones all arrive.
	testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			@qos qos
			route @qos {
				qos
			}
		}
		udp/%s {
			@relay relay
			route @relay {
				relay {
					secrets {env.GAMEGATE_TEST_RELAY_SECRET}
					max_content 100
				}
			}
		}
	}
}
http://%s {
	relay_allocations {
		secrets {env.GAMEGATE_TEST_RELAY_SECRET}
		tokens relay-test-token
		public_address %s
	}
}
`, qosAddr, relayAddr, httpAddr, relayAddr))
	silent := testutil.DialUDP(t, "127.0.0.1:0", "127.0.0.1:9").Conn.LocalAddr().String() // never answers

	dir := t.TempDir()
	valid, invalid := filepath.Join(dir, "valid.caddyfile"), filepath.Join(dir, "invalid.caddyfile")
	if err := os.WriteFile(valid, []byte("{\n\tlayer4 {\n\t\tudp/127.0.0.1:0 {\n\t\t\troute {\n\t\t\t\tqos {\n\t\t\t\t\trate 5\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(invalid, []byte("{\n\tlayer4 {\n\t\tudp/127.0.0.1:0 {\n\t\t\troute {\n\t\t\t\tqos {\n\t\t\t\t\tban_units 9\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	api := "http://" + httpAddr
	for _, tc := range []struct {
		name string
		args []string
		want int
		says string // in the output
	}{
		{"qos-check answered", []string{"qos-check", "--server", "eu=" + qosAddr, "--requests", "3", "--wait", "500ms"}, 0, "eu"},
		{"qos-check a region without response", []string{"qos-check", "--server", "eu=" + qosAddr, "--server", "void=" + silent, "--requests", "3", "--wait", "300ms"}, 1, "region void got no response"},
		{"qos-check without servers", []string{"qos-check"}, 1, "give --discovery"},
		{"relay-check no loss", []string{"relay-check", "--api", api, "--token", "relay-test-token", "--messages", "20", "--size", "64"}, 0, "20 sent, 20 received, 0.0% lost"},
		{"relay-check messages lost", []string{"relay-check", "--api", api, "--token", "relay-test-token", "--messages", "5", "--size", "200", "--timeout", "5s"}, 1, "5 of 5 messages lost"},
		{"relay-check without --api", []string{"relay-check"}, 1, "--api is required"},
		{"validate accepted", []string{"validate", "--config", valid, "--adapter", "caddyfile"}, 0, "Valid configuration"},
		{"validate refused", []string{"validate", "--config", invalid, "--adapter", "caddyfile"}, 1, "ban_units"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runGamegate(t, bin, tc.args...)
			if code != tc.want || !strings.Contains(out, tc.says) {
				t.Fatalf("gamegate %s: exit %d, want %d saying %q:\n%s", strings.Join(tc.args, " "), code, tc.want, tc.says, out)
			}
		})
	}
}

// gamegate's help and usage name the gamegate binary, and `gamegate
// modules` lists every gamegate module: the modules list-modules shows
// without a package in a build of this checkout (list-modules | grep
// gamegate found 12 of them).
func TestCLINamesGamegate(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"help"}, []string{"gamegate is Caddy", "gamegate [command]", "gamegate adds 'modules'"}},
		{[]string{"qos-check", "--help"}, []string{"Usage:\n  gamegate qos-check"}},
		{[]string{"relay-check", "--help"}, []string{"Usage:\n  gamegate relay-check"}},
	} {
		code, out := runGamegate(t, bin, tc.args...)
		for _, s := range tc.says {
			if code != 0 || !strings.Contains(out, s) {
				t.Errorf("gamegate %s: exit %d, want 0 saying %q:\n%s", strings.Join(tc.args, " "), code, s, out)
			}
		}
		if strings.Contains(out, "Usage:\n  caddy") || strings.Contains(out, "Caddy is an extensible server platform") {
			t.Errorf("gamegate %s: usage names caddy:\n%s", strings.Join(tc.args, " "), out)
		}
	}
	code, out := runGamegate(t, bin, "modules")
	if code != 0 {
		t.Fatalf("gamegate modules: exit %d:\n%s", code, out)
	}
	listed := strings.Fields(out)
	_, all := runGamegate(t, bin, "list-modules", "--packages", "--skip-standard")
	var ours []string
	for line := range strings.Lines(all) {
		if f := strings.Fields(line); len(f) == 1 && !strings.Contains(f[0], ":") {
			ours = append(ours, f[0])
		}
	}
	if len(listed) < 29 || strings.Join(listed, " ") != strings.Join(ours, " ") {
		t.Fatalf("gamegate modules: got %d %q, want the %d modules list-modules shows without a package %q", len(listed), listed, len(ours), ours)
	}
}
