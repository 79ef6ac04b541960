package tests

import (
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// An Unreal Engine 2 fixture (Unreal Tournament 2004's answers: a UTF-16
// server name, Windows-1252 text, colour codes, rules and players each
// split over datagrams, bots, a team score, repeated and mutator rules)
// through game_query and GameDig (qstat misreads it: see below).
func TestUnreal2AgainstGamedig(t *testing.T) {
	s := testutil.ExampleUnreal2()
	testutil.StartUnreal2(t, s)
	st := fixtureCheck{protocol: "unreal2", gameID: "unrealtournament2004", addr: s.Addr,
		known: map[string]gamedigKnown{"password": {"value", "GameDig 5.3.3 reads GamePassword True as no password"}}}.run(t)
	if st["name"] != "Gâte ☆ UT" || st["password"] != true || len(st["bots"].([]any)) != 2 || len(st["players"].([]any)) != 2 {
		t.Errorf("gamegate read %v", st)
	}

	// qstat 2.15's -ut2s and -ut2004s (which ask the given port plus one)
	// read this server as online with no name, map or players and a host
	// port taken from inside the IP string, where GameDig reads every
	// field: no comparison with qstat is made.
}
