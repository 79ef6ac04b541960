package testutil

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strconv"
	"testing"

	"github.com/gamegate/gamegate/wire"
)

// A GameSpy fixture server, written from the protocols' documentation
// (the GameSpy SDK's query layouts as Unreal Tournament, Battlefield 1942,
// Battlefield 2 and Minecraft's enable-query answer): one server's state,
// answered in GameSpy 1, 2 or 3 with the text in Windows-1252, split over
// several datagrams sent out of order. It is only trusted where GameDig's
// own client, querying it, reads what gamegate reads.

// GameSpyPlayer is one player of the fixture.
type GameSpyPlayer struct {
	Name        string
	Score, Ping int
	Team        int // 0 or 1
}

// GameSpyFixture is what the fixture server answers.
type GameSpyFixture struct {
	Hostname, Map, GameType, Version string
	MaxPlayers, HostPort             int
	Password                         bool
	Players                          []GameSpyPlayer
	Teams                            [2]string
	// GameName, if set, is GameSpy 2's gamename key.
	GameName string
	// UTF8 sends text as UTF-8 (Minecraft's enable-query) instead of
	// Windows-1252.
	UTF8 bool
}

// DefaultGameSpyFixture has three players on two teams and names outside
// ASCII that Windows-1252 holds (é, ö, ë, and € at 0x80).
func DefaultGameSpyFixture() GameSpyFixture {
	return GameSpyFixture{
		Hostname: "Café Arena €", Map: "DM-Deck16][", GameType: "TeamGame", Version: "451",
		MaxPlayers: 16, HostPort: 7777,
		Players: []GameSpyPlayer{
			{Name: "Renée", Score: 12, Ping: 40, Team: 0},
			{Name: "Böb", Score: 3, Ping: 55, Team: 1},
			{Name: "Zoë", Score: -2, Ping: 70, Team: 1},
		},
		Teams: [2]string{"Red", "Blue"},
	}
}

func w1252(s string) []byte { return wire.EncodeWindows1252(nil, s) }

// text is s in f's encoding.
func (f *GameSpyFixture) text(s string) []byte {
	if f.UTF8 {
		return []byte(s)
	}
	return w1252(s)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ServeGameSpy1 answers \status\ requests with f in GameSpy 1: three
// datagrams numbered by \queryid\, sent last first, the last with
// \final\.
func ServeGameSpy1(t testing.TB, f GameSpyFixture) netip.AddrPort {
	queryID := 0
	return ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if !bytes.HasPrefix(req, []byte(`\status\`)) {
			return nil
		}
		queryID++
		kv := func(b []byte, k string, v []byte) []byte {
			return append(append(append(append(b, '\\'), k...), '\\'), v...)
		}
		id := strconv.Itoa(queryID)
		var p1, p2, p3 []byte
		p1 = kv(p1, "hostname", w1252(f.Hostname))
		p1 = kv(p1, "gamename", []byte("ut"))
		p1 = kv(p1, "gamever", []byte(f.Version))
		p1 = kv(p1, "mapname", w1252(f.Map))
		p1 = kv(p1, "gametype", []byte(f.GameType))
		p1 = kv(p1, "numplayers", []byte(strconv.Itoa(len(f.Players))))
		p1 = kv(p1, "maxplayers", []byte(strconv.Itoa(f.MaxPlayers)))
		p1 = kv(p1, "hostport", []byte(strconv.Itoa(f.HostPort)))
		p1 = kv(p1, "password", []byte(flag(f.Password)))
		p1 = kv(p1, "queryid", []byte(id+".1"))
		for i, pl := range f.Players {
			b := &p2
			if i >= 2 {
				b = &p3
			}
			n := "_" + strconv.Itoa(i)
			*b = kv(*b, "player"+n, w1252(pl.Name))
			*b = kv(*b, "frags"+n, []byte(strconv.Itoa(pl.Score)))
			*b = kv(*b, "ping"+n, []byte(strconv.Itoa(pl.Ping)))
			*b = kv(*b, "team"+n, []byte(strconv.Itoa(pl.Team)))
		}
		p2 = kv(p2, "queryid", []byte(id+".2"))
		for i, name := range f.Teams {
			p3 = kv(p3, "teamname_"+strconv.Itoa(i), w1252(name))
		}
		p3 = kv(kv(p3, "final", nil), "queryid", []byte(id+".3"))
		return [][]byte{p3, p1, p2}
	})
}

// ServeGameSpy3 answers GameSpy 3 with f: the challenge request with
// challenge, then the full status, with that challenge unless it is 0
// (Battlefield 2 wants none, GameSpy 4 servers such as Minecraft's
// always do), in two parts sent last first: the keys and the players'
// names and scores in the first, their pings and teams and the teams in
// the second.
func ServeGameSpy3(t testing.TB, f GameSpyFixture, challenge int32) netip.AddrPort {
	return ServeUDP(t, GameSpy3Answers(f, challenge))
}

// GameSpy3Answers is ServeGameSpy3's answer to each request.
func GameSpy3Answers(f GameSpyFixture, challenge int32) func(netip.AddrPort, []byte) [][]byte {
	return func(_ netip.AddrPort, req []byte) [][]byte {
		if len(req) < 7 || req[0] != 0xFE || req[1] != 0xFD {
			return nil
		}
		if req[2] == 0x09 {
			return [][]byte{append(append(append([]byte(nil), req[2:7]...), strconv.Itoa(int(challenge))...), 0)}
		}
		switch {
		case req[2] != 0:
			return nil
		case challenge == 0 && len(req) != 11:
			return nil
		case challenge != 0 && (len(req) != 15 || int32(binary.BigEndian.Uint32(req[7:11])) != challenge):
			return nil
		}
		z := func(b []byte, s ...[]byte) []byte {
			for _, x := range s {
				b = append(append(b, x...), 0)
			}
			return b
		}
		var b0, b1 []byte
		b0 = z(b0, []byte("hostname"), f.text(f.Hostname), []byte("gamever"), []byte(f.Version),
			[]byte("mapname"), f.text(f.Map), []byte("gametype"), []byte(f.GameType),
			[]byte("numplayers"), []byte(strconv.Itoa(len(f.Players))), []byte("maxplayers"), []byte(strconv.Itoa(f.MaxPlayers)),
			[]byte("hostport"), []byte(strconv.Itoa(f.HostPort)), []byte("password"), []byte(flag(f.Password)), nil)
		b0 = append(b0, 1)
		col := func(b []byte, name string, v func(GameSpyPlayer) []byte) []byte {
			b = append(z(b, []byte(name)), 0)
			for _, p := range f.Players {
				b = z(b, v(p))
			}
			return append(b, 0)
		}
		b0 = col(b0, "player_", func(p GameSpyPlayer) []byte { return f.text(p.Name) })
		b0 = col(b0, "score_", func(p GameSpyPlayer) []byte { return []byte(strconv.Itoa(p.Score)) })
		b1 = col(b1, "ping_", func(p GameSpyPlayer) []byte { return []byte(strconv.Itoa(p.Ping)) })
		b1 = col(b1, "team_", func(p GameSpyPlayer) []byte { return []byte(strconv.Itoa(p.Team)) })
		b1 = append(b1, 2)
		b1 = append(z(append(z(b1, []byte("team_t")), 0), f.text(f.Teams[0]), f.text(f.Teams[1])), 0)
		part := func(n byte, body []byte) []byte {
			return append(append(append(append([]byte{0}, req[3:7]...), "splitnum\x00"...), n, 0), body...)
		}
		return [][]byte{part(0x81, b1), part(0, b0)}
	}
}

// ServeGameSpy2 answers GameSpy 2 with f: the sections a request asks
// for (keys, players, teams), one after the other in one datagram.
func ServeGameSpy2(t testing.TB, f GameSpyFixture) netip.AddrPort {
	return ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if len(req) != 10 || req[0] != 0xFE || req[1] != 0xFD || req[2] != 0 {
			return nil
		}
		z := func(b []byte, s ...[]byte) []byte {
			for _, x := range s {
				b = append(append(b, x...), 0)
			}
			return b
		}
		var body []byte
		if req[7] == 0xFF {
			body = z(body, []byte("hostname"), w1252(f.Hostname), []byte("gamever"), []byte(f.Version),
				[]byte("mapname"), w1252(f.Map), []byte("gametype"), []byte(f.GameType),
				[]byte("numplayers"), []byte(strconv.Itoa(len(f.Players))), []byte("maxplayers"), []byte(strconv.Itoa(f.MaxPlayers)),
				[]byte("hostport"), []byte(strconv.Itoa(f.HostPort)), []byte("password"), []byte(flag(f.Password)))
			if f.GameName != "" {
				body = z(body, []byte("gamename"), []byte(f.GameName))
			}
			body = z(body, nil, nil)
		}
		if req[8] == 0xFF {
			body = z(append(body, 0, byte(len(f.Players))), []byte("player_"), []byte("score_"), []byte("ping_"), []byte("team_"), nil)
			for _, p := range f.Players {
				body = z(body, w1252(p.Name), []byte(strconv.Itoa(p.Score)), []byte(strconv.Itoa(p.Ping)), []byte(strconv.Itoa(p.Team)))
			}
		}
		if req[9] == 0xFF {
			body = z(append(body, 0, 2), []byte("team_t"), []byte("score_t"), nil)
			for i, name := range f.Teams {
				body = z(body, w1252(name), []byte(strconv.Itoa(10*(2-i))))
			}
		}
		return [][]byte{append(append([]byte{0}, req[3:7]...), body...)}
	})
}
