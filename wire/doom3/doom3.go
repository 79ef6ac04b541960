// Package doom3 is the codec of the id Tech 4 server query (Doom 3, Quake
// 4, Prey, Enemy Territory: Quake Wars, Wolfenstein 2009), free of I/O.
//
// A query is FF FF "getInfo" NUL and a 32-bit challenge. The answer is
//
//	FF FF "infoResponse" NUL challenge protocol [size] (key NUL value NUL)* NUL NUL
//	player* 0x20 osmask [ETQW's fields]
//
// in little-endian numbers, the protocol version being major<<16 | minor.
// Each player is its client number (ascending, under 32), a 16-bit ping, a
// 32-bit rate (not in ETQW), its name and, in some games, a clan tag
// (Quake 4), or a clan tag's position, the tag and a type flag (ETQW). The
// answer does not say which layout it uses: Decode tries them in turn, as
// GameDig does, and keeps the first that ends at client number 32.
package doom3

import (
	"bytes"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what a decoder accepts and keeps.
const (
	MaxDatagram = 65507
	MaxVars     = 1024
	// EndOfPlayers is the client number that ends the players: id Tech 4's
	// MAX_ASYNC_CLIENTS.
	EndOfPlayers = 0x20
	// RequestLen is a query's length.
	RequestLen = 2 + len("getInfo") + 1 + 4
)

// Layout is how the players are laid out.
type Layout uint8

// The layouts, in the order Decode tries them.
const (
	// LayoutPlain: id, ping, rate, name (Doom 3).
	LayoutPlain Layout = iota + 1
	// LayoutClanTag: a clan tag after the name (Quake 4).
	LayoutClanTag
	// LayoutClanTagTypeFlag: a clan tag's position, the tag and a type
	// flag after the name (ETQW).
	LayoutClanTagTypeFlag
)

// ErrNotResponse reports a datagram that is not an infoResponse.
var ErrNotResponse = errors.New("not an id Tech 4 infoResponse")

// ErrPlayers reports players that fit none of the layouts.
var ErrPlayers = errors.New("the players fit no known layout")

var (
	requestHead  = []byte("\xff\xffgetInfo\x00")
	responseHead = []byte("\xff\xffinfoResponse\x00")
)

// AppendRequest appends a query carrying challenge.
func AppendRequest(b []byte, challenge uint32) []byte {
	b = append(b, requestHead...)
	return le32(b, challenge)
}

// LooksLikeResponse reports whether b starts as an infoResponse does.
func LooksLikeResponse(b []byte) bool { return bytes.HasPrefix(b, responseHead) }

// Var is one key/value pair of the server info.
type Var struct {
	Key, Value []byte
}

// Player is one player.
type Player struct {
	ID         byte
	Ping       uint16
	Rate       uint32 // not in ETQW
	Name       []byte
	ClanTagPos byte // LayoutClanTagTypeFlag
	ClanTag    []byte
	TypeFlag   byte // LayoutClanTagTypeFlag
}

// ETQW holds Enemy Territory: Quake Wars' fields after the OS mask.
// ServerType 0 is a game server (InterestedClients), 1 a TV server
// (ConnectedClients, MaxClients).
type ETQW struct {
	Ranked, GameState, ServerType byte
	TimeLeft                      uint32
	InterestedClients             byte
	ConnectedClients, MaxClients  uint32
}

// Response is a decoded answer. Decode fills it in place, reusing its
// slices; its byte slices alias the datagram.
type Response struct {
	Challenge, Protocol uint32
	// Size is the packet size some games (ETQW) send after the protocol,
	// valid when HasSize is set.
	Size    uint32
	HasSize bool
	Vars    []Var
	Layout  Layout
	Players []Player
	OSMask  uint32
	// IsETQW says the server info's gamename names ETQW: its players have
	// no rate and ETQW's fields follow the OS mask.
	IsETQW bool
	ETQW   ETQW
}

// Get returns the value of the first key equal to key and whether it is
// present.
func (r *Response) Get(key string) ([]byte, bool) {
	for _, v := range r.Vars {
		if string(v.Key) == key {
			return v.Value, true
		}
	}
	return nil, false
}

// Decode parses an answer into r.
func (r *Response) Decode(b []byte) error {
	r.Vars, r.Players, r.HasSize, r.Size, r.Layout, r.IsETQW, r.ETQW = r.Vars[:0], r.Players[:0], false, 0, 0, false, ETQW{}
	if len(b) > MaxDatagram {
		return wire.NewDecodeError("datagram", 0, wire.ErrTooLong)
	}
	if !LooksLikeResponse(b) {
		return wire.NewDecodeError("header", 0, ErrNotResponse)
	}
	rd := wire.NewReader(b)
	rd.Skip("header", len(responseHead))
	r.Challenge = rd.U32LE("challenge")
	r.Protocol = rd.U32LE("protocol")
	// A size, where sent, is small: its high half is zero, where a key's
	// third and fourth bytes never are (GameDig's test).
	if rest := rd.Len(); rest >= 4 {
		at := rd.Offset()
		if b[at+2] == 0 && b[at+3] == 0 {
			r.Size, r.HasSize = rd.U32LE("size"), true
		}
	}
	for {
		key := rd.CString("info key")
		value := rd.CString("info value")
		if rd.Err() != nil {
			return rd.Err()
		}
		if len(key) == 0 {
			if len(value) != 0 {
				return rd.Fail("info", wire.ErrMagic)
			}
			break
		}
		if len(r.Vars) == MaxVars {
			return rd.Fail("info", wire.ErrTooLong)
		}
		r.Vars = append(r.Vars, Var{Key: key, Value: value})
	}
	if g, ok := r.Get("gamename"); ok && containsFold(g, "etqw") {
		r.IsETQW = true
	}
	players := b[rd.Offset():]
	for _, l := range []Layout{LayoutPlain, LayoutClanTag, LayoutClanTagTypeFlag} {
		if n, ok := r.decodePlayers(players, l); ok {
			r.Layout = l
			rd.Skip("players", n)
			break
		}
	}
	if r.Layout == 0 {
		return rd.Fail("players", ErrPlayers)
	}
	r.OSMask = rd.U32LE("os mask")
	if r.IsETQW {
		e := &r.ETQW
		e.Ranked, e.TimeLeft = rd.U8("ranked"), rd.U32LE("time left")
		e.GameState, e.ServerType = rd.U8("game state"), rd.U8("server type")
		switch e.ServerType {
		case 0:
			e.InterestedClients = rd.U8("interested clients")
		case 1:
			e.ConnectedClients, e.MaxClients = rd.U32LE("connected clients"), rd.U32LE("max clients")
		}
	}
	if err := rd.Err(); err != nil {
		return err
	}
	if rd.Len() != 0 {
		return rd.Fail("trailing bytes", wire.ErrTooLong)
	}
	return nil
}

// decodePlayers reads the players of b in layout l, into r.Players, and
// returns the bytes they took, the end marker included.
func (r *Response) decodePlayers(b []byte, l Layout) (int, bool) {
	r.Players = r.Players[:0]
	rd := wire.NewReader(b)
	last := -1
	for {
		id := rd.U8("player id")
		if rd.Err() != nil || int(id) <= last || id > EndOfPlayers {
			return 0, false
		}
		if id == EndOfPlayers {
			return rd.Offset(), true
		}
		last = int(id)
		p := Player{ID: id, Ping: rd.U16LE("player ping")}
		if !r.IsETQW {
			p.Rate = rd.U32LE("player rate")
		}
		p.Name = rd.CString("player name")
		switch l {
		case LayoutClanTag:
			p.ClanTag = rd.CString("player clan tag")
		case LayoutClanTagTypeFlag:
			p.ClanTagPos = rd.U8("player clan tag position")
			p.ClanTag = rd.CString("player clan tag")
			p.TypeFlag = rd.U8("player type flag")
		}
		if rd.Err() != nil {
			return 0, false
		}
		r.Players = append(r.Players, p)
	}
}

func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		match := true
		for j := range len(s) {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != s[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// AppendTo appends r as a server sends it. Keys are not empty, keys,
// values, names and tags hold no NUL, and players' IDs ascend under
// EndOfPlayers, or the result would not decode to r.
func (r *Response) AppendTo(b []byte) ([]byte, error) {
	b = append(b, responseHead...)
	b = le32(le32(b, r.Challenge), r.Protocol)
	if r.HasSize {
		b = le32(b, r.Size)
	}
	for _, v := range r.Vars {
		if len(v.Key) == 0 || bytes.IndexByte(v.Key, 0) >= 0 || bytes.IndexByte(v.Value, 0) >= 0 {
			return b, errors.New("doom3: an info key is empty or a key or value holds a NUL")
		}
		b = append(append(append(append(b, v.Key...), 0), v.Value...), 0)
	}
	b = append(b, 0, 0)
	last := -1
	for _, p := range r.Players {
		if int(p.ID) <= last || p.ID >= EndOfPlayers {
			return b, errors.New("doom3: players' IDs do not ascend under 32")
		}
		last = int(p.ID)
		b = append(b, p.ID, byte(p.Ping), byte(p.Ping>>8))
		if !r.IsETQW {
			b = le32(b, p.Rate)
		}
		b = append(append(b, p.Name...), 0)
		switch r.Layout {
		case LayoutClanTag:
			b = append(append(b, p.ClanTag...), 0)
		case LayoutClanTagTypeFlag:
			b = append(append(append(b, p.ClanTagPos), p.ClanTag...), 0, p.TypeFlag)
		}
	}
	b = le32(append(b, EndOfPlayers), r.OSMask)
	if r.IsETQW {
		e := r.ETQW
		b = append(le32(append(b, e.Ranked), e.TimeLeft), e.GameState, e.ServerType)
		switch e.ServerType {
		case 0:
			b = append(b, e.InterestedClients)
		case 1:
			b = le32(le32(b, e.ConnectedClients), e.MaxClients)
		}
	}
	return b, nil
}

func le32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// AppendPlain appends s without Quake colour codes as GameDig removes
// them: "^" and one character, or "^X" and six, where none of them is a
// line break (which its pattern's "." does not match).
func AppendPlain(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == '^' && i+1 < len(s) && !lineBreak(s[i+1]) {
			if s[i+1] == 'X' && i+7 < len(s) && !bytes.ContainsAny(s[i+2:i+8], "\r\n") {
				i += 7
			} else {
				i++
			}
			continue
		}
		dst = append(dst, s[i])
	}
	return dst
}

func lineBreak(c byte) bool { return c == '\n' || c == '\r' }
