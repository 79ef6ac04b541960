package testutil

// The fixture servers' example contents, shared by the handlers' tests and
// the end-to-end tests against GameDig and qstat: non-ASCII text, bots,
// passwords and each protocol's quirks.

// ExampleASE is a Multi Theft Auto-like ASE server: UTF-8 text, a
// password, rules, a player with every field and players with some.
func ExampleASE() *ASEServer {
	return &ASEServer{Game: "mta", Name: "Gâte ☆ MTA", GameType: "Freeroam", Map: "San Andreas", Version: "1.6",
		GamePort: 22003, MaxPlayers: 32, Password: true, Rules: [][2]string{{"weather", "sunny"}, {"mode", "râce"}},
		Players: []ASEPlayer{{Name: "Zoë", Team: "Red", Skin: "cj", Score: 12, Ping: 40, Time: 300},
			{Name: "Bob", Score: -3, Ping: 55}, {Name: "Ümit", Score: 0, Ping: 1}}}
}

// ExampleUnreal2 is an Unreal Tournament 2004-like server: a UTF-16 server
// name, Windows-1252 text, a colour code, rules and players each taking
// several datagrams, bots, a team score, repeated and mutator rules, the
// GamePassword rule.
func ExampleUnreal2() *Unreal2Server {
	return &Unreal2Server{Name: "Gâte ☆ UT", Map: "DM-Rankin", GameType: "xDeathMatch", Skill: "Adept", GamePort: 7777,
		NumPlayers: 4, MaxPlayers: 16, Flags: 0x41,
		Rules: [][2]string{{"ServerMode", "dedicated"}, {"Mutator", "MutInstaGib"}, {"GamePassword", "True"},
			{"AdminName", "Zoë"}, {"Mutator", "MutQuadJump"}, {"MaxSpectators", "2"}, {"MaxSpectators", "4"}},
		Players: []Unreal2Player{{ID: 1, Name: "\x1b\xff\x01\x01Alice", Ping: 40, Score: 12, StatsID: 9},
			{ID: 2, Name: "Zoë", Ping: 0, Score: 5}, {ID: 0, Name: "Red Team Score", Score: 3},
			{ID: 3, Name: "Ünal", Ping: 70, Score: -1, UTF16: true}, {ID: 4, Name: "Sarge", Score: 1}}}
}

// ExampleQuake2 is a Quake 2 server: Windows-1252 text, needpass, a bot,
// a line with an address.
func ExampleQuake2() *QuakeServer {
	return &QuakeServer{Info: [][2]string{{"hostname", "Gâte Q2"}, {"mapname", "q2dm1"}, {"maxclients", "16"},
		{"needpass", "1"}, {"version", "q2pro r1"}, {"dmflags", "16"}},
		Players: []QuakePlayer{{Frags: 12, Ping: 45, Name: "Zoë"}, {Frags: 0, Ping: 0, Name: "Bot"},
			{Frags: -3, Ping: 120, Name: "Eve", Address: "127.0.0.1:27901"}}}
}

// ExampleQuakeWorld is an mvdsv-like QuakeWorld server: the map and
// *version keys, Windows-1252 text, a bot.
func ExampleQuakeWorld() *QuakeServer {
	return &QuakeServer{QuakeWorld: true, Info: [][2]string{{"hostname", "Gâte QW"}, {"map", "dm4"}, {"maxclients", "8"},
		{"*version", "MVDSV 0.36"}, {"version", "2.40"}, {"fraglimit", "30"}, {"needpass", "0"}},
		Players: []QuakePlayer{{ID: 5, Frags: 10, Time: 3, Ping: 25, Name: "Zoë", Skin: "base", Top: 4, Bottom: 11},
			{ID: 7, Frags: 1, Time: 1, Ping: 0, Name: "Frogbot"},
			{ID: 9, Frags: 3, Time: 12, Ping: 80, Name: "Alice", Skin: "base", Top: 13, Bottom: 13}}}
}

// ExampleDoom3 is a Doom 3 server: colour codes, Windows-1252 text, a map
// path, a password, a bot.
func ExampleDoom3() *Doom3Server {
	return &Doom3Server{Protocol: 0x00010029, Info: [][2]string{{"si_name", "^1Gâte ^7Doom"}, {"si_map", "maps/game/mp/d3dm1.entities"},
		{"si_maxPlayers", "8"}, {"si_usepass", "1"}, {"gamename", "baseDOOM-1"}, {"si_gameType", "Tourney"}, {"si_version", "DOOM 1.3.1"}},
		Players: []Doom3Player{{ID: 0, Ping: 50, Rate: 16384, Name: "^1Alice"}, {ID: 1, Name: "Bot"},
			{ID: 3, Ping: 80, Rate: 25000, Name: "Zoë"}}}
}
