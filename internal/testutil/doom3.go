package testutil

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// Doom3Player is a player of a Doom3Server.
type Doom3Player struct {
	ID   byte
	Ping uint16
	Rate uint32
	Name string
}

// Doom3Server is a fixture Doom 3 server on loopback, written from the
// answer's layout (Doom 3's idAsyncServer answer to getInfo): to FF FF
// "getInfo" NUL and a 32-bit challenge it answers FF FF "infoResponse"
// NUL, the challenge, the protocol version, the server info as NUL-ended
// key/value pairs ending in two NULs, each player (client number, ping,
// rate, name), client number 32 and the OS mask, in little-endian numbers
// and Windows-1252 text (the fixtures keep to its Latin-1 half).
type Doom3Server struct {
	Protocol uint32
	Info     [][2]string
	Players  []Doom3Player
	// Addr is the query address, set by StartDoom3.
	Addr string
}

// StartDoom3 starts s, answering until the test ends.
func StartDoom3(t testing.TB, s *Doom3Server) {
	t.Helper()
	le := binary.LittleEndian
	var body []byte // what follows the challenge
	body = le.AppendUint32(body, s.Protocol)
	for _, kv := range s.Info {
		body = append(append(append(append(body, latin1(kv[0])...), 0), latin1(kv[1])...), 0)
	}
	body = append(body, 0, 0)
	for _, p := range s.Players {
		body = le.AppendUint32(le.AppendUint16(append(body, p.ID), p.Ping), p.Rate)
		body = append(append(body, latin1(p.Name)...), 0)
	}
	body = le.AppendUint32(append(body, 0x20), 1) // end of players, the OS mask
	head := []byte("\xff\xffgetInfo\x00")
	s.Addr = ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		if !bytes.HasPrefix(req, head) || len(req) < len(head)+4 {
			return nil
		}
		answer := append([]byte("\xff\xffinfoResponse\x00"), req[len(head):len(head)+4]...)
		return [][]byte{append(answer, body...)}
	}).String()
}
