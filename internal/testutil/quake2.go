package testutil

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// QuakePlayer is a player of a QuakeServer. Quake 2 sends Frags, Ping,
// Name and Address (when set); QuakeWorld every field but Address.
type QuakePlayer struct {
	ID, Frags, Time, Ping, Top, Bottom int
	Name, Skin, Address                string
}

// QuakeServer is a fixture Quake 2 or QuakeWorld server on loopback,
// written from the answer's layout (id Software's SVC_Status): to
// FF FF FF FF "status" it answers FF FF FF FF, "print\n" (Quake 2) or "n"
// (QuakeWorld), the info string, a newline and a line per player. Text is
// sent in Windows-1252 (the fixtures keep to its Latin-1 half).
type QuakeServer struct {
	QuakeWorld bool
	Info       [][2]string
	Players    []QuakePlayer
	// Addr is the query address, set by StartQuake.
	Addr string
}

// StartQuake starts s, answering until the test ends.
func StartQuake(t testing.TB, s *QuakeServer) {
	t.Helper()
	var b strings.Builder // the text after FF FF FF FF
	if s.QuakeWorld {
		b.WriteString("n")
	} else {
		b.WriteString("print\n")
	}
	for _, kv := range s.Info {
		fmt.Fprintf(&b, "\\%s\\%s", kv[0], kv[1])
	}
	b.WriteString("\n")
	for _, p := range s.Players {
		switch {
		case s.QuakeWorld:
			fmt.Fprintf(&b, "%d %d %d %d \"%s\" \"%s\" %d %d\n", p.ID, p.Frags, p.Time, p.Ping, p.Name, p.Skin, p.Top, p.Bottom)
		case p.Address != "":
			fmt.Fprintf(&b, "%d %d \"%s\" \"%s\"\n", p.Frags, p.Ping, p.Name, p.Address)
		default:
			fmt.Fprintf(&b, "%d %d \"%s\"\n", p.Frags, p.Ping, p.Name)
		}
	}
	answer := append([]byte("\xff\xff\xff\xff"), latin1(b.String())...)
	s.Addr = ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		cmd := strings.TrimRight(string(req), "\x00\n")
		if cmd != "\xff\xff\xff\xffstatus" && !strings.HasPrefix(cmd, "\xff\xff\xff\xffstatus ") {
			return nil
		}
		return [][]byte{answer}
	}).String()
}
