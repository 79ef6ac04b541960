package tests

import (
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// An All-Seeing-Eye fixture (Multi Theft Auto's answer, UTF-8 text, a
// password, rules, players with all fields and with some) through
// game_query, GameDig and qstat.
func TestASEAgainstGamedigAndQstat(t *testing.T) {
	s := testutil.ExampleASE()
	testutil.StartASE(t, s)
	st := fixtureCheck{protocol: "ase", gameID: "gtasamta", addr: s.Addr}.run(t)
	if st["name"] != s.Name || st["numplayers"] != float64(3) || st["password"] != true {
		t.Errorf("gamegate read %v", st)
	}
	// qstat takes the address as the game's and asks its port plus 123.
	// It drops the bytes of non-ASCII text (with -nnx too), so names are
	// compared where they are ASCII.
	qs := quakestat(t, "-eye", gamePortAddr(t, s.Addr, -123))
	rules, _ := qs["rules"].(map[string]any)
	sameValues(t, "quakestat -eye", []fieldPair{
		{"map", st["map"], qs["map"]},
		{"gametype", st["raw"].(map[string]any)["gametype"], qs["gametype"]},
		{"numplayers", st["numplayers"], qs["numplayers"]},
		{"maxplayers", st["maxplayers"], qs["maxplayers"]},
		{"connect", st["connect"], "127.0.0.1:" + fmt.Sprint(rules["hostport"])},
		{"version", st["version"], rules["_version"]},
		{"password", st["password"], rules["_password"] == "1"},
		{"rule weather", st["raw"].(map[string]any)["weather"], rules["weather"]},
	})
	qsPlayers, _ := qs["players"].([]any)
	players, _ := st["players"].([]any)
	if len(qsPlayers) != len(players) {
		t.Fatalf("quakestat: %d players, gamegate %d", len(qsPlayers), len(players))
	}
	for i := range players {
		ours, theirs := players[i].(map[string]any), qsPlayers[i].(map[string]any)
		raw := ours["raw"].(map[string]any)
		pairs := []fieldPair{{"score", raw["score"], theirs["score"]}, {"ping", raw["ping"], theirs["ping"]}}
		if name := ours["name"].(string); isASCII(name) {
			pairs = append(pairs, fieldPair{"name", name, theirs["name"]})
		}
		if team, ok := raw["team"]; ok {
			pairs = append(pairs, fieldPair{"team", team, theirs["team"]})
		}
		sameValues(t, fmt.Sprintf("quakestat -eye player %d", i), pairs)
	}
}
