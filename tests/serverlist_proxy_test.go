package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// Behind a proxy, the server list shows a client the servers of the
// client's scope, as Caddy determines the client (trusted_proxies), not
// the proxy's: a public client coming through a proxy on loopback is not
// shown a loopback server's address.
func TestServerListBehindAProxyHidesInternalServers(t *testing.T) {
	udp, web := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	gate := testcaddy.Start(t, gateConfig{
		Globals: "servers {\n\ttrusted_proxies static 127.0.0.0/8\n}",
		UDP:     udp, Protocols: "master", Web: web, Site: "server_list",
	}.String())
	fakeServers(t, udp, "127.0.0.9", 1)
	testutil.WaitFor(t, "the server to register", func() bool {
		return gate.MustMetric(t, "gamegate_master_servers") == 1
	})
	total := func(forwardedFor string) int {
		req, _ := http.NewRequest("GET", "http://"+web+"/", nil)
		if forwardedFor != "" {
			req.Header.Set("X-Forwarded-For", forwardedFor)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var p struct{ Total int }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &p) != nil {
			t.Fatalf("GET /: %d %s", resp.StatusCode, body)
		}
		return p.Total
	}
	// A loopback client (no proxy in between) sees it.
	if n := total(""); n != 1 {
		t.Fatalf("a loopback client is shown %d servers, want the loopback one", n)
	}
	// A public client, through the trusted proxy, does not.
	if n := total("203.0.113.5"); n != 0 {
		t.Fatalf("a public client behind a proxy is shown %d servers, want none (the server is on loopback)", n)
	}
}
