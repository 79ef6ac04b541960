package testutil

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
	"unicode/utf16"
)

// Unreal2Player is an entry of an Unreal2Server's players answer: ID 0 is
// a team score, Ping 0 a bot.
type Unreal2Player struct {
	ID      uint32
	Name    string
	Ping    uint32
	Score   int32
	StatsID uint32
	UTF16   bool // sent as UTF-16, else Windows-1252
}

// Unreal2Server is a fixture Unreal Engine 2 server on loopback (Unreal
// Tournament 2004's query as GameDig's and qstat's notes describe it): to
// 79 00 00 00 and a kind (79, or 78 as qstat sends) it answers a datagram
// of 80 00 00 00, the kind and the payload, in little-endian numbers and
// Unreal strings (a length byte counting the NUL and Windows-1252 bytes,
// or 0x80 with a count of UTF-16LE units). The server name goes out in
// UTF-16, everything else in Windows-1252. Rules are sent two to a
// datagram and players three to a datagram, so both answers take several.
// To kind 3, qstat's, it sends all three answers.
type Unreal2Server struct {
	// IP is the address the server names itself by; UT2004 leaves it
	// empty.
	IP                         string
	Name, Map, GameType, Skill string
	GamePort                   uint32
	NumPlayers, MaxPlayers     uint32
	Flags                      uint32
	Rules                      [][2]string
	Players                    []Unreal2Player
	// Addr is the query address, set by StartUnreal2.
	Addr string
}

func u2Latin(b []byte, s string) []byte {
	raw := latin1(s)
	return append(append(append(b, byte(len(raw)+1)), raw...), 0)
}

func u2UTF16(b []byte, s string) []byte {
	units := utf16.Encode([]rune(s))
	b = append(b, byte(0x80|len(units)))
	for _, u := range units {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

// latin1 is s in Windows-1252 for the characters it shares with Latin-1
// (the fixtures' text keeps to those).
func latin1(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b
}

// StartUnreal2 starts s, answering until the test ends.
func StartUnreal2(t testing.TB, s *Unreal2Server) {
	t.Helper()
	le := binary.LittleEndian
	head := func(kind byte) []byte { return []byte{0x80, 0, 0, 0, kind} }
	var port atomic.Uint32 // the query port, known once the socket is bound
	var answer func(kind byte) [][]byte
	answer = func(kind byte) [][]byte {
		switch kind {
		case 0:
			b := le.AppendUint32(head(0), 1)
			b = u2Latin(b, s.IP)
			b = le.AppendUint32(le.AppendUint32(b, s.GamePort), port.Load())
			b = u2UTF16(b, s.Name)
			b = u2Latin(u2Latin(b, s.Map), s.GameType)
			b = le.AppendUint32(le.AppendUint32(b, s.NumPlayers), s.MaxPlayers)
			b = le.AppendUint32(le.AppendUint32(b, 0), s.Flags) // ping, flags
			return [][]byte{u2Latin(b, s.Skill)}
		case 1:
			var out [][]byte
			for i, r := range s.Rules {
				if i%2 == 0 {
					out = append(out, head(1))
				}
				out[len(out)-1] = u2Latin(u2Latin(out[len(out)-1], r[0]), r[1])
			}
			return out
		case 3: // all three, as qstat asks
			return append(append(answer(0), answer(1)...), answer(2)...)
		case 2:
			var out [][]byte
			for i, p := range s.Players {
				if i%3 == 0 {
					out = append(out, head(2))
				}
				b := le.AppendUint32(out[len(out)-1], p.ID)
				if p.UTF16 {
					b = u2UTF16(b, p.Name)
				} else {
					b = u2Latin(b, p.Name)
				}
				b = le.AppendUint32(le.AppendUint32(le.AppendUint32(b, p.Ping), uint32(p.Score)), p.StatsID)
				out[len(out)-1] = b
			}
			return out
		}
		return nil
	}
	addr := ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		// GameDig asks with 79 00 00 00, qstat with 78 00 00 00.
		if len(req) != 5 || req[0] != 0x79 && req[0] != 0x78 || req[1] != 0 || req[2] != 0 || req[3] != 0 {
			return nil
		}
		return answer(req[4])
	})
	port.Store(uint32(addr.Port()))
	s.Addr = addr.String()
}
