// Package tests holds gamegate's end-to-end tests: a real Caddy, started in
// this process from a Caddyfile on free loopback ports, and real UDP and HTTP
// clients. Caddy is process-global, so these tests never run in parallel.
package tests

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4"

	_ "github.com/gamegate/gamegate"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
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

// gateConfig is a Caddyfile of gamegate's UDP server on one address and,
// if Web is set, an HTTP site: the shape most of these tests start from.
type gateConfig struct {
	Globals   string // global options beside gamegate
	UDP       string // the UDP server's address
	Protocols string // what it serves, as Caddyfile lines
	Web       string // the HTTP site's address; no site when empty
	Site      string // the site's directives
}

func (c gateConfig) String() string {
	indent := func(s string, tabs int) string {
		return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+strings.Repeat("\t", tabs))
	}
	var b strings.Builder
	b.WriteString("{\n")
	if c.Globals != "" {
		fmt.Fprintf(&b, "\t%s\n", indent(c.Globals, 1))
	}
	fmt.Fprintf(&b, "\tgamegate {\n\t\tudp %s {\n\t\t\t%s\n\t\t}\n\t}\n}\n", c.UDP, indent(c.Protocols, 3))
	if c.Web != "" {
		fmt.Fprintf(&b, "\nhttp://%s {\n\t%s\n}\n", c.Web, indent(c.Site, 1))
	}
	return b.String()
}

// startMasterSite starts Caddy with a master on a free UDP port and site's
// directives on a free HTTP port, and returns it with the two addresses.
func startMasterSite(t *testing.T, site string) (gate *testcaddy.Caddy, udp, web string) {
	t.Helper()
	udp, web = testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	return testcaddy.Start(t, gateConfig{UDP: udp, Protocols: "master", Web: web, Site: site}.String()), udp, web
}
