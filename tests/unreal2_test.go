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
	s := &testutil.Unreal2Server{Name: "Gâte ☆ UT", Map: "DM-Rankin", GameType: "xDeathMatch", Skill: "Adept", GamePort: 7777,
		NumPlayers: 4, MaxPlayers: 16, Flags: 0x41,
		Rules: [][2]string{{"ServerMode", "dedicated"}, {"Mutator", "MutInstaGib"}, {"GamePassword", "True"},
			{"AdminName", "Zoë"}, {"Mutator", "MutQuadJump"}, {"MaxSpectators", "2"}, {"MaxSpectators", "4"}},
		Players: []testutil.Unreal2Player{{ID: 1, Name: "\x1b\xff\x01\x01Alice", Ping: 40, Score: 12, StatsID: 9},
			{ID: 2, Name: "Zoë", Ping: 0, Score: 5}, {ID: 0, Name: "Red Team Score", Score: 3},
			{ID: 3, Name: "Ünal", Ping: 70, Score: -1, UTF16: true}, {ID: 4, Name: "Sarge", Score: 1}}}
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
