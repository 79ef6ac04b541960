package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// An Unreal Engine 2 fixture (Unreal Tournament 2004's answers: a UTF-16
// server name, Windows-1252 text, colour codes, rules and players each
// split over datagrams, bots, a team score, repeated and mutator rules)
// through game_query, GameDig and qstat.
func TestUnreal2AgainstGamedigAndQstat(t *testing.T) {
	s := testutil.ExampleUnreal2()
	testutil.StartUnreal2(t, s)
	st := fixtureCheck{protocol: "unreal2", gameID: "unrealtournament2004", addr: s.Addr,
		known: map[string]gamedigKnown{"password": {"value", "GameDig 5.3.3 reads GamePassword True as no password"}}}.run(t)
	if st["name"] != "Gâte ☆ UT" || st["password"] != true || len(st["bots"].([]any)) != 2 || len(st["players"].([]any)) != 2 {
		t.Errorf("gamegate read %v", st)
	}

	// qstat asks the given port plus one, with kind 3 (all three answers),
	// and again when it found no end to them (its rules hold each value
	// once per answer, joined by "|"). It reads the server info one string
	// out of step (the name as the map), so only its rules and players are
	// compared.
	qs := quakestat(t, "-ut2s", gamePortAddr(t, s.Addr, -1))
	compareQuakestatPlayers(t, "-ut2s", st, qs, "score")
	rules, _ := qs["rules"].(map[string]any)
	ours := st["raw"].(map[string]any)["rules"].(map[string]any)
	for _, k := range []string{"ServerMode", "GamePassword"} {
		first, _, _ := strings.Cut(fmt.Sprint(rules[k]), "|")
		sameValues(t, "quakestat -ut2s", []fieldPair{{"rule " + k, ours[k], first}})
	}
}
