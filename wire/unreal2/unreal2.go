// Package unreal2 is the codec of the Unreal Engine 2 server query (Unreal
// Tournament 2003 and 2004, Killing Floor, Red Orchestra, Darkest Hour,
// Devastation, Unreal 2 XMP), free of I/O.
//
// A query is five bytes: 79 00 00 00 and the kind asked (0 server info, 1
// rules, 2 players). Each answer datagram is a four-byte header, the kind
// it answers and a payload; rules and players may take several datagrams,
// whose payloads are read as one, in arrival order. Every number is a
// little-endian 32-bit integer; every string an Unreal string:
//
//	len < 0x80:   len (the NUL counted), Windows-1252 bytes, NUL
//	len >= 0x80:  (len & 0x7F) UTF-16LE code units, no terminator
//
// where some games put a stray 01 byte after a UTF-16 string's length, not
// counted in it. The game's query port is usually its game port plus one.
package unreal2

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gamegate/gamegate/wire"
)

// Kinds of query and answer.
const (
	KindInfo    byte = 0
	KindRules   byte = 1
	KindPlayers byte = 2
)

// Limits that bound what a decoder accepts and keeps.
const (
	// MaxDatagram is the largest answer datagram accepted: a UDP payload.
	MaxDatagram = 65507
	// MaxRules bounds the key/value pairs of a rules answer.
	MaxRules = 4096
	// MaxPlayers bounds the entries of a players answer.
	MaxPlayers = 1024
	// RequestLen is a query's length; PacketHeaderLen an answer
	// datagram's, before its payload.
	RequestLen      = 5
	PacketHeaderLen = 5
	// ucs2Flag marks a UTF-16 string's length byte.
	ucs2Flag = 0x80
	// strayByte is what some games put after a UTF-16 string's length.
	strayByte = 0x01
)

// ErrNotAnswer reports a datagram that is not an Unreal 2 answer.
var ErrNotAnswer = errors.New("not an Unreal 2 answer")

// AppendRequest appends the query for kind (KindInfo, KindRules or
// KindPlayers).
func AppendRequest(b []byte, kind byte) []byte {
	return append(b, 0x79, 0, 0, 0, kind)
}

// LooksLikeRequest reports whether b is an Unreal 2 query.
func LooksLikeRequest(b []byte) bool {
	return len(b) == RequestLen && b[0] == 0x79 && b[1] == 0 && b[2] == 0 && b[3] == 0 && b[4] <= KindPlayers
}

// SplitPacket returns the kind an answer datagram answers and its
// payload, aliasing d. The header's first four bytes are not checked, as
// GameDig and games differ there; the kind must be one of the three.
func SplitPacket(d []byte) (kind byte, payload []byte, err error) {
	if len(d) > MaxDatagram {
		return 0, nil, wire.NewDecodeError("datagram", 0, wire.ErrTooLong)
	}
	if len(d) < PacketHeaderLen {
		return 0, nil, wire.NewDecodeError("header", 0, wire.ErrTruncated)
	}
	if d[4] > KindPlayers {
		return 0, nil, wire.NewDecodeError("kind", 4, ErrNotAnswer)
	}
	return d[4], d[PacketHeaderLen:], nil
}

// String is an Unreal string as sent: its length byte, whether a stray 01
// byte followed it, and its bytes (without the NUL of a Windows-1252
// string), aliasing the input.
type String struct {
	Len   byte
	Stray bool
	Raw   []byte
}

// UTF16 reports whether s is UTF-16LE rather than Windows-1252.
func (s String) UTF16() bool { return s.Len >= ucs2Flag }

// readString reads an Unreal string as GameDig reads one: a
// Windows-1252 string runs to its NUL, whatever its length byte says.
func readString(r *wire.Reader, field string) String {
	s := String{Len: r.U8(field)}
	switch {
	case r.Err() != nil, s.Len == 0:
	case s.UTF16():
		if c, ok := r.PeekU8(); ok && c == strayByte {
			r.Skip(field, 1)
			s.Stray = true
		}
		s.Raw = r.Bytes(field, int(s.Len&^ucs2Flag)*2)
	default:
		s.Raw = r.CString(field)
	}
	return s
}

// AppendString appends s as it was sent. A Windows-1252 string must hold
// no NUL and have a length byte under 0x80; a UTF-16 one an even number of
// bytes, twice its length byte's count.
func AppendString(b []byte, s String) ([]byte, error) {
	b = append(b, s.Len)
	switch {
	case s.Len == 0:
		if len(s.Raw) != 0 || s.Stray {
			return b, errors.New("unreal2: an empty string's length byte is 0")
		}
	case s.UTF16():
		if len(s.Raw) != int(s.Len&^ucs2Flag)*2 {
			return b, errors.New("unreal2: a UTF-16 string's length byte does not count its bytes")
		}
		if s.Stray || len(s.Raw) > 0 && s.Raw[0] == strayByte {
			b = append(b, strayByte) // or its first byte would read as the stray one
		}
		b = append(b, s.Raw...)
	default:
		for _, c := range s.Raw {
			if c == 0 {
				return b, errors.New("unreal2: a string holds a NUL")
			}
		}
		b = append(b, s.Raw...)
		b = append(b, 0)
	}
	return b, nil
}

// AppendUTF8 appends s as UTF-8: Windows-1252 or UTF-16 decoded, a final
// NUL dropped. With stripColours, Unreal's colour codes (ESC and three
// characters) and the control characters 0x00 to 0x1A are removed, as
// GameDig removes them.
func AppendUTF8(dst []byte, s String, stripColours bool) []byte {
	start := len(dst)
	if s.UTF16() {
		for i := 0; i+1 < len(s.Raw); i += 2 {
			u := uint16(s.Raw[i]) | uint16(s.Raw[i+1])<<8
			if utf16.IsSurrogate(rune(u)) && i+3 < len(s.Raw) {
				u2 := uint16(s.Raw[i+2]) | uint16(s.Raw[i+3])<<8
				if r := utf16.DecodeRune(rune(u), rune(u2)); r != utf8.RuneError {
					dst = utf8.AppendRune(dst, r)
					i += 2
					continue
				}
			}
			dst = utf8.AppendRune(dst, rune(u)) // a lone surrogate becomes U+FFFD
		}
	} else {
		dst = wire.AppendWindows1252(dst, s.Raw)
	}
	if len(dst) > start && dst[len(dst)-1] == 0 {
		dst = dst[:len(dst)-1]
	}
	if !stripColours {
		return dst
	}
	out := start
	for i := start; i < len(dst); {
		c := dst[i]
		if c == 0x1B {
			i++
			for k := 0; k < 3 && i < len(dst); k++ { // ESC and three characters
				_, n := utf8.DecodeRune(dst[i:])
				i += n
			}
			continue
		}
		if c <= 0x1A {
			i++
			continue
		}
		dst[out] = c
		out++
		i++
	}
	return dst[:out]
}

// Info is a server info answer's payload. Extra is what follows the
// player counts, which games differ on (see DecodeExtra).
type Info struct {
	ServerID            uint32
	IP                  String
	GamePort, QueryPort uint32
	Name, Map, GameType String
	NumPlayers          uint32
	MaxPlayers          uint32
	Extra               []byte
}

// Decode parses an info payload into i; its slices alias p.
func (i *Info) Decode(p []byte) error {
	r := wire.NewReader(p)
	i.ServerID = r.U32LE("server id")
	i.IP = readString(&r, "ip")
	i.GamePort = r.U32LE("game port")
	i.QueryPort = r.U32LE("query port")
	i.Name = readString(&r, "name")
	i.Map = readString(&r, "map")
	i.GameType = readString(&r, "game type")
	i.NumPlayers = r.U32LE("players")
	i.MaxPlayers = r.U32LE("max players")
	i.Extra = r.Rest()
	return r.Err()
}

// AppendTo appends i as a payload.
func (i *Info) AppendTo(b []byte) ([]byte, error) {
	b = le32(b, i.ServerID)
	b, err := AppendString(b, i.IP)
	if err != nil {
		return b, err
	}
	b = le32(le32(b, i.GamePort), i.QueryPort)
	for _, s := range []String{i.Name, i.Map, i.GameType} {
		if b, err = AppendString(b, s); err != nil {
			return b, err
		}
	}
	b = le32(le32(b, i.NumPlayers), i.MaxPlayers)
	return append(b, i.Extra...), nil
}

// Extra is what games put after an info answer's player counts. Unreal
// Tournament 2004: Ping, Flags, Skill; Killing Floor: the waves first.
// Has says which fields were there.
type Extra struct {
	WaveCurrent, WaveTotal, Ping, Flags uint32
	Skill                               String
	HasWaves, HasFlags                  bool
}

// DecodeExtra reads an info answer's Extra as GameDig does: with waves
// for Killing Floor, else a ping, and flags and a skill string when eight
// bytes or more follow the ping. Missing trailing fields stay zero.
func DecodeExtra(extra []byte, killingFloor bool) (Extra, error) {
	var e Extra
	r := wire.NewReader(extra)
	if killingFloor {
		e.WaveCurrent, e.WaveTotal = r.U32LE("wave"), r.U32LE("waves")
		e.HasWaves = r.Err() == nil
	}
	e.Ping = r.U32LE("ping")
	if killingFloor || r.Len() >= 8 {
		e.Flags = r.U32LE("flags")
		e.HasFlags = r.Err() == nil
		e.Skill = readString(&r, "skill")
	}
	return e, r.Err()
}

// Rule is one key/value pair of a rules answer.
type Rule struct {
	Key, Value String
}

// Rules is a rules answer. Decode fills it in place, reusing its slice;
// its strings alias the payload.
type Rules struct {
	Rules []Rule
}

// Decode parses the payloads of a rules answer, joined, into r.
func (r *Rules) Decode(p []byte) error {
	r.Rules = r.Rules[:0]
	rd := wire.NewReader(p)
	for rd.Err() == nil && rd.Len() > 0 {
		if len(r.Rules) == MaxRules {
			return rd.Fail("rules", wire.ErrTooLong)
		}
		k := readString(&rd, "rule key")
		v := readString(&rd, "rule value")
		r.Rules = append(r.Rules, Rule{Key: k, Value: v})
	}
	return rd.Err()
}

// AppendTo appends r as one payload.
func (r *Rules) AppendTo(b []byte) ([]byte, error) {
	var err error
	for _, rule := range r.Rules {
		if b, err = AppendString(b, rule.Key); err != nil {
			return b, err
		}
		if b, err = AppendString(b, rule.Value); err != nil {
			return b, err
		}
	}
	return b, nil
}

// Player is one entry of a players answer. An entry with ID 0 is a team's
// score on the scoreboard, not a player.
type Player struct {
	ID      uint32
	Name    String
	Ping    uint32
	Score   int32
	StatsID uint32
}

// Players is a players answer. Decode fills it in place, reusing its
// slice; its strings alias the payload.
type Players struct {
	Players []Player
}

// Decode parses the payloads of a players answer, joined, into p.
func (p *Players) Decode(b []byte) error {
	p.Players = p.Players[:0]
	rd := wire.NewReader(b)
	for rd.Err() == nil && rd.Len() > 0 {
		if len(p.Players) == MaxPlayers {
			return rd.Fail("players", wire.ErrTooLong)
		}
		var pl Player
		pl.ID = rd.U32LE("player id")
		pl.Name = readString(&rd, "player name")
		pl.Ping = rd.U32LE("player ping")
		pl.Score = int32(rd.U32LE("player score"))
		pl.StatsID = rd.U32LE("player stats id")
		p.Players = append(p.Players, pl)
	}
	return rd.Err()
}

// AppendTo appends p as one payload.
func (p *Players) AppendTo(b []byte) ([]byte, error) {
	var err error
	for _, pl := range p.Players {
		b = le32(b, pl.ID)
		if b, err = AppendString(b, pl.Name); err != nil {
			return b, err
		}
		b = le32(le32(le32(b, pl.Ping), uint32(pl.Score)), pl.StatsID)
	}
	return b, nil
}

func le32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
