package serverlist

import (
	"strings"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// sort=ping puts a server with no round trip measured yet (-1) after every
// one with a ping, however small (a live status's 0), and so does -ping:
// whichever way the known pings are sorted, an unknown one says nothing.
func TestSortByPingPutsUnknownLast(t *testing.T) {
	live := map[string]*query.Status{"127.0.0.1:1": {Name: "Live Arena", Map: "oa_dm1", NumPlayers: 3, MaxPlayers: 8,
		Players: []query.Player{}, Bots: []query.Player{}, Protocol: "quake3", Address: "127.0.0.1:1", Connect: "127.0.0.1:1"}}
	r := newRig(t, live)
	testutil.WaitFor(t, "the live status, and a query of every server", func() bool {
		_, p := r.get(t, "127.0.0.1:9", "/", nil)
		return strings.Contains(names(p), "Live Arena") && r.queries.Load() >= 4
	})
	_, p := r.get(t, "127.0.0.1:9", "/?sort=ping", nil)
	if got := names(p); len(p.Servers) != 4 || !strings.HasPrefix(got, "Live Arena,") {
		t.Errorf("sort=ping: %q, want Live Arena (0 ms) before the servers with no ping", got)
	}
	_, p = r.get(t, "127.0.0.1:9", "/?sort=-ping", nil)
	if got := names(p); len(p.Servers) != 4 || !strings.HasPrefix(got, "Live Arena,") {
		t.Errorf("sort=-ping: %q, want Live Arena before the servers with no ping", got)
	}
}
