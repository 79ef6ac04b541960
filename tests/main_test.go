// Package tests holds gamegate's end-to-end tests: a real Caddy, started in
// this process from a Caddyfile on free loopback ports, and real UDP and HTTP
// clients. Caddy is process-global, so these tests never run in parallel.
package tests

import (
	"net/http"
	"os"
	"testing"
	"time"

	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4"

	_ "github.com/gamegate/gamegate/caddymodule"
	"github.com/gamegate/gamegate/internal/testutil"
)

// httpClient is the client every test request goes through: no request can
// hang a test past its timeout.
var httpClient = &http.Client{Timeout: 30 * time.Second}

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.StopSharedRedis()
	if clusterBinDir != "" {
		os.RemoveAll(clusterBinDir)
	}
	os.Exit(code)
}
