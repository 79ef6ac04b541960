package testutil

import (
	"net/netip"
	"strconv"
	"testing"
)

// ASEPlayer is a player of an ASEServer.
type ASEPlayer struct {
	Name, Team, Skin  string
	Score, Ping, Time int
}

// ASEServer is a fixture All-Seeing-Eye server on loopback, written from
// the protocol's layout (GameSpy Arcade's ASE query as GameDig's and
// qstat's protocol notes describe it): to the query "s" it answers EYE1,
// nine length-prefixed strings, the rules and an empty key, then each
// player with a flags byte naming its fields. Strings are sent as UTF-8,
// as Multi Theft Auto does. The first player has every field; the others
// name, score and ping only.
type ASEServer struct {
	Game, Name, GameType, Map, Version string
	GamePort, MaxPlayers               int
	Password                           bool
	Rules                              [][2]string
	Players                            []ASEPlayer
	// Addr is the query address, set by StartASE.
	Addr string
}

// aseString is an ASE string: a length byte counting itself, the bytes.
func aseString(b []byte, s string) []byte {
	return append(append(b, byte(len(s)+1)), s...)
}

// StartASE starts s, answering until the test ends.
func StartASE(t testing.TB, s *ASEServer) {
	t.Helper()
	pass := "0"
	if s.Password {
		pass = "1"
	}
	answer := []byte("EYE1")
	for _, f := range []string{s.Game, strconv.Itoa(s.GamePort), s.Name, s.GameType, s.Map, s.Version, pass,
		strconv.Itoa(len(s.Players)), strconv.Itoa(s.MaxPlayers)} {
		answer = aseString(answer, f)
	}
	for _, r := range s.Rules {
		answer = aseString(aseString(answer, r[0]), r[1])
	}
	answer = aseString(answer, "")
	for i, p := range s.Players {
		if i == 0 {
			answer = append(answer, 0x3F) // name, team, skin, score, ping, time
			for _, f := range []string{p.Name, p.Team, p.Skin, strconv.Itoa(p.Score), strconv.Itoa(p.Ping), strconv.Itoa(p.Time)} {
				answer = aseString(answer, f)
			}
			continue
		}
		answer = append(answer, 0x19) // name, score, ping
		for _, f := range []string{p.Name, strconv.Itoa(p.Score), strconv.Itoa(p.Ping)} {
			answer = aseString(answer, f)
		}
	}
	s.Addr = ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if string(req) != "s" {
			return nil
		}
		return [][]byte{answer}
	}).String()
}
