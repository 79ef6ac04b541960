package tests

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// A Battlefield 4-like Frostbite fixture (two teams, a password, an event
// packet before the serverInfo answer, ISO-8859-1 names, players with the
// game's fields) over TCP, through game_query and GameDig.
func TestBattlefieldAgainstGamedig(t *testing.T) {
	s := testutil.ExampleBattlefield()
	testutil.StartBattlefield(t, s)
	st := fixtureCheck{protocol: "battlefield", gameID: "battlefield4", addr: s.Addr}.run(t)
	raw := st["raw"].(map[string]any)
	if st["name"] != "Gâte BF4 #1" || st["numplayers"] != float64(2) || st["password"] != true || st["version"] != "179665" ||
		st["connect"] != "127.0.0.1:25200" || raw["region"] != "EU" || raw["quickmatch"] != false {
		t.Errorf("gamegate read %v", st)
	}
	players, _ := st["players"].([]any)
	if len(players) != 2 || players[0].(map[string]any)["name"] != "Zoë" ||
		players[0].(map[string]any)["raw"].(map[string]any)["team"] != float64(1) {
		t.Errorf("players: %v", players)
	}
}

// Ad-hoc Frostbite targets are held to allow_targets before anything is
// dialled: a TCP query reaches only what a UDP one could.
func TestBattlefieldAdHocTargets(t *testing.T) {
	s := testutil.ExampleBattlefield()
	testutil.StartBattlefield(t, s)
	port := netip.MustParseAddrPort(s.Addr).Port()
	gate := startQueryGate(t, `
			ad_hoc battlefield
			allow_targets 127.0.0.1/32`)
	var st map[string]any
	if r := getJSON(t, gate+"/query/"+s.Addr, &st); r.status != 200 || st["name"] != "Gâte BF4 #1" || st["address"] != s.Addr {
		t.Fatalf("GET /query/%s: %d %s", s.Addr, r.status, r.body)
	}
	before := s.Connections.Load()
	if before == 0 {
		t.Fatal("the fixture counted no connection")
	}
	for _, target := range []string{"127.0.0.2", "192.0.2.1"} {
		path := fmt.Sprintf("/query/%s:%d", target, port)
		if r := request(t, "GET", gate+path); r.status != 403 || !strings.Contains(r.body, "outside the networks") {
			t.Errorf("GET %s: %d %s, want 403 outside the networks", path, r.status, r.body)
		}
	}
	if n := s.Connections.Load(); n != before {
		t.Errorf("the fixture counted %d connections after refused targets, want %d", n, before)
	}
}
