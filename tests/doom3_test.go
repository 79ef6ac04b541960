package tests

import (
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// A Doom 3 fixture (colour codes, Windows-1252 text, a map path, a
// password, a bot) through game_query, GameDig and qstat.
func TestDoom3AgainstGamedigAndQstat(t *testing.T) {
	s := testutil.ExampleDoom3()
	testutil.StartDoom3(t, s)
	st := fixtureCheck{protocol: "doom3", gameID: "doom3", addr: s.Addr}.run(t)
	if st["name"] != "Gâte Doom" || st["map"] != "game/mp/d3dm1" || st["password"] != true || st["version"] != "1.41" {
		t.Errorf("gamegate read %v", st)
	}
	// qstat keeps colour codes and si_map as sent, and drops the bytes of
	// non-ASCII text: players are matched by client number.
	qs := quakestat(t, "-dm3s", s.Addr)
	rules, _ := qs["rules"].(map[string]any)
	raw := st["raw"].(map[string]any)
	sameValues(t, "quakestat -dm3s", []fieldPair{
		{"numplayers", st["numplayers"], qs["numplayers"]}, {"maxplayers", st["maxplayers"], qs["maxplayers"]},
		{"version", st["version"], rules["protocol"]}, {"gamename", raw["gamename"], rules["gamename"]},
		{"si_usepass", raw["si_usepass"], rules["si_usepass"]},
	})
	byID := map[string]map[string]any{}
	for _, list := range []string{"players", "bots"} {
		for _, p := range st[list].([]any) {
			r := p.(map[string]any)["raw"].(map[string]any)
			byID[fmt.Sprint(r["id"])] = r
		}
	}
	qsPlayers, _ := qs["players"].([]any)
	if len(qsPlayers) != len(byID) {
		t.Fatalf("quakestat -dm3s: %d players, gamegate %d", len(qsPlayers), len(byID))
	}
	for _, p := range qsPlayers {
		q := p.(map[string]any)
		ours, ok := byID[fmt.Sprint(q["number"])]
		if !ok {
			t.Errorf("quakestat -dm3s: a player %v gamegate does not have", q["number"])
			continue
		}
		sameValues(t, "quakestat -dm3s", []fieldPair{{"ping", ours["ping"], q["ping"]}, {"rate", ours["rate"], q["rate"]}})
	}
}
