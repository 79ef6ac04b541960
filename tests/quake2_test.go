package tests

import (
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// A Quake 2 fixture (Windows-1252 text, needpass, a bot, a line with an
// address) through game_query, GameDig and qstat.
func TestQuake2AgainstGamedigAndQstat(t *testing.T) {
	s := testutil.ExampleQuake2()
	testutil.StartQuake(t, s)
	st := fixtureCheck{protocol: "quake2", gameID: "quake2", addr: s.Addr, known: map[string]gamedigKnown{
		"maxplayers": {"type", "a string (maxclients as sent)"},
		"password":   {"value", "GameDig reads g_needpass only; Quake 2 sends needpass"},
	}}.run(t)
	if st["password"] != true || st["maxplayers"] != float64(16) {
		t.Errorf("gamegate read %v", st)
	}
	qs := quakestat(t, "-q2s", s.Addr)
	compareQuakestatPlayers(t, "-q2s", st, qs, "frags")
	sameValues(t, "quakestat -q2s", []fieldPair{
		{"map", st["map"], qs["map"]},
		{"numplayers", st["numplayers"], qs["numplayers"]}, {"maxplayers", st["maxplayers"], qs["maxplayers"]},
	})
}

// A QuakeWorld fixture (mvdsv's info keys: map, *version) through
// game_query, GameDig and qstat.
func TestQuake1AgainstGamedigAndQstat(t *testing.T) {
	s := testutil.ExampleQuakeWorld()
	testutil.StartQuake(t, s)
	st := fixtureCheck{protocol: "quake1", gameID: "quake", addr: s.Addr, known: map[string]gamedigKnown{
		"maxplayers": {"type", "a string (maxclients as sent)"},
		"map":        {"value", "GameDig reads mapname only; QuakeWorld sends map"},
	}}.run(t)
	if st["map"] != "dm4" || st["version"] != "MVDSV 0.36" || len(st["bots"].([]any)) != 1 {
		t.Errorf("gamegate read %v", st)
	}
	// qstat reads a player with ping 0 as a spectator, and drops the first
	// three characters of its name as if they were a spectator's "\s\";
	// it counts it apart: its players and spectators are gamegate's
	// numplayers, and its bot is only counted.
	qs := quakestat(t, "-qws", s.Addr)
	compareQuakestatPlayers(t, "-qws", map[string]any{"players": st["players"], "bots": []any{}}, qs, "score")
	sameValues(t, "quakestat -qws", []fieldPair{
		{"map", st["map"], qs["map"]}, {"maxplayers", st["maxplayers"], qs["maxplayers"]},
		{"numplayers", st["numplayers"], qs["numplayers"].(float64) + qs["numspectators"].(float64)},
	})
}

// compareQuakestatPlayers compares the players and bots gamegate read
// with qstat's, by name: the score (under gamegate's raw key score) and
// ping. qstat drops the bytes of non-ASCII text (with -nnx too), so
// players whose names are not ASCII are only counted.
func compareQuakestatPlayers(t *testing.T, flag string, st, qs map[string]any, score string) {
	t.Helper()
	byName := map[string]map[string]any{}
	for _, list := range []string{"players", "bots"} {
		for _, p := range st[list].([]any) {
			m := p.(map[string]any)
			byName[m["name"].(string)] = m["raw"].(map[string]any)
		}
	}
	qsPlayers, _ := qs["players"].([]any)
	if len(qsPlayers) < len(byName) {
		t.Fatalf("quakestat %s: %d players, gamegate %d", flag, len(qsPlayers), len(byName))
	}
	theirs := map[string]map[string]any{}
	for _, p := range qsPlayers {
		q := p.(map[string]any)
		theirs[fmt.Sprint(q["name"])] = q
	}
	for name, raw := range byName {
		if !isASCII(name) {
			continue
		}
		q, ok := theirs[name]
		if !ok {
			t.Errorf("quakestat %s: no player %q", flag, name)
			continue
		}
		sameValues(t, "quakestat "+flag, []fieldPair{{"score", raw[score], q["score"]}, {"ping", raw["ping"], q["ping"]}})
	}
}
