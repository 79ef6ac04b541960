package testutil

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
)

// BattlefieldServer is a fixture Frostbite server's remote administration
// port on loopback, written from EA DICE's "Battlefield 3 PC Server Remote
// Administration Protocol" (its packet layout: sequence, size and word
// count, then length-prefixed, NUL-terminated words, little-endian; an
// answer echoes its request's sequence with the response bit set). It
// answers serverInfo, version and "listPlayers all" without a login, as
// the games do, and sends an event packet (server-originated, not an
// answer) before every serverInfo answer, as Venice Unleashed servers do.
// Text is sent as ISO-8859-1.
type BattlefieldServer struct {
	// Info is serverInfo's words after "OK", in the game's order.
	Info []string
	// Game and Version are version's two words.
	Game, Version string
	// Fields and Players are listPlayers' field names and each player's
	// values.
	Fields  []string
	Players [][]string
	// Addr is the address, set by StartBattlefield.
	Addr string
	// Connections counts the connections accepted.
	Connections atomic.Int64
}

// frostbitePacket encodes one packet of words, each ISO-8859-1.
func frostbitePacket(sequence uint32, words []string) []byte {
	b := make([]byte, 12, 64)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, 0)
		start := len(b)
		for _, r := range w {
			b = append(b, byte(r)) // ISO-8859-1: the fixture's text is within it
		}
		binary.LittleEndian.PutUint32(b[start-4:], uint32(len(b)-start))
		b = append(b, 0)
	}
	binary.LittleEndian.PutUint32(b, sequence)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(words)))
	return b
}

// readFrostbite reads one request packet's sequence and words.
func readFrostbite(c net.Conn) (uint32, []string, error) {
	var h [12]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return 0, nil, err
	}
	size := binary.LittleEndian.Uint32(h[4:])
	if size < 12 || size > 16384 {
		return 0, nil, io.ErrUnexpectedEOF
	}
	body := make([]byte, size-12)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, nil, err
	}
	var words []string
	for n := binary.LittleEndian.Uint32(h[8:]); n > 0 && len(body) >= 4; n-- {
		l := int(binary.LittleEndian.Uint32(body))
		if l+5 > len(body) {
			return 0, nil, io.ErrUnexpectedEOF
		}
		words = append(words, string(body[4:4+l]))
		body = body[5+l:]
	}
	return binary.LittleEndian.Uint32(h[:]), words, nil
}

// StartBattlefield starts s, answering until the test ends.
func StartBattlefield(t testing.TB, s *BattlefieldServer) {
	t.Helper()
	s.Addr = ServeTCP(t, func(c net.Conn) {
		s.Connections.Add(1)
		s.serve(c)
	})
}

func (s *BattlefieldServer) serve(c net.Conn) {
	for {
		seq, words, err := readFrostbite(c)
		if err != nil || len(words) == 0 {
			return
		}
		answer := []string{"UnknownCommand"}
		switch words[0] {
		case "serverInfo":
			event := frostbitePacket(1<<31|7, []string{"player.onJoin", "Carol", "EA_3"})
			if _, err := c.Write(event); err != nil {
				return
			}
			answer = append([]string{"OK"}, s.Info...)
		case "version":
			answer = []string{"OK", s.Game, s.Version}
		case "listPlayers":
			answer = append([]string{"OK", strconv.Itoa(len(s.Fields))}, s.Fields...)
			answer = append(answer, strconv.Itoa(len(s.Players)))
			for _, p := range s.Players {
				answer = append(answer, p...)
			}
		}
		if _, err := c.Write(frostbitePacket(seq&(1<<30-1)|1<<30, answer)); err != nil {
			return
		}
	}
}

// ExampleBattlefield is a Battlefield 4-like server: two teams, a
// password, the address and region fields, ISO-8859-1 names, players with
// the game's nine fields.
func ExampleBattlefield() *BattlefieldServer {
	return &BattlefieldServer{
		Info: []string{"Gâte BF4 #1", "2", "64", "ConquestLarge0", "MP_Prison", "1", "2",
			"2", "287.5", "250", "0", "", "true", "false", "true", "3600", "120",
			"127.0.0.1:25200", "", "true", "EU", "ams", "NL", "false"},
		Game: "BF4", Version: "179665",
		Fields: []string{"name", "guid", "teamId", "squadId", "kills", "deaths", "score", "rank", "ping", "type"},
		Players: [][]string{
			{"Zoë", "EA_1", "1", "2", "10", "3", "1200", "40", "35", "0"},
			{"Bob", "EA_2", "2", "0", "1", "5", "100", "3", "80", "0"},
		},
	}
}
