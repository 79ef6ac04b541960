// Package quake3 is the codec of the Quake 3 family's connectionless server
// queries (ioquake3, OpenArena, DarkPlaces and the engines that share its
// out-of-band format), free of I/O.
//
// A query is a datagram of four 0xFF bytes, then "getstatus" or "getinfo",
// a space and a challenge the server echoes back as the "challenge" key of
// its answer. The answers are
//
//	FF FF FF FF "statusResponse\n" info "\n" player-line*
//	FF FF FF FF "infoResponse\n" info
//
// where info is an info string, \key\value\key\value…, and each player line
// is `score ping "name"\n`; DarkPlaces-based servers may add a team number
// after the name. Names carry colour codes, "^" and one character
// ([AppendPlainName] removes them).
package quake3

import (
	"bytes"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what a decoder accepts and keeps.
const (
	// MaxChallenge is the longest challenge ioquake3 echoes; longer ones
	// make it ignore the query.
	MaxChallenge = 128
	// MaxVars bounds the info string's key/value pairs.
	MaxVars = 1024
	// MaxPlayers bounds the player lines of a status answer (DarkPlaces
	// allows 255 clients, ioquake3 64).
	MaxPlayers = 256
	// MaxDatagram is the largest answer accepted: a UDP payload.
	MaxDatagram = 65507
)

// Kinds of answer.
const (
	// KindStatus is a statusResponse: info string and players.
	KindStatus Kind = iota + 1
	// KindInfo is an infoResponse: a short info string.
	KindInfo
)

// Kind says which answer a Response holds.
type Kind uint8

// String names the kind as it appears on the wire.
func (k Kind) String() string {
	switch k {
	case KindStatus:
		return "statusResponse"
	case KindInfo:
		return "infoResponse"
	}
	return "unknown"
}

// ErrNotResponse reports a datagram that is not a Quake 3 status or info
// answer.
var ErrNotResponse = errors.New("not a Quake 3 status or info answer")

var (
	oob            = []byte{0xFF, 0xFF, 0xFF, 0xFF}
	statusResponse = []byte("statusResponse")
	infoResponse   = []byte("infoResponse")
)

// Var is one key/value pair of an info string.
type Var struct {
	Key, Value []byte
}

// Player is one player line of a status answer.
type Player struct {
	Score, Ping int
	// Team is DarkPlaces' team field, valid when HasTeam is set.
	Team    int
	HasTeam bool
	// Name as sent, colour codes included.
	Name []byte
}

// Response is a decoded status or info answer. Decode fills it in place,
// reusing its slices, and its byte slices alias the datagram.
type Response struct {
	Kind    Kind
	Vars    []Var
	Players []Player
}

// Get returns the value of the first key equal to key (compared without
// regard to ASCII case, as the engines do) and whether it is present.
func (r *Response) Get(key string) ([]byte, bool) {
	for i := range r.Vars {
		if equalFold(r.Vars[i].Key, key) {
			return r.Vars[i].Value, true
		}
	}
	return nil, false
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// AppendRequest appends a query: command is "getstatus" or "getinfo", and
// challenge (at most MaxChallenge bytes, without spaces, backslashes,
// semicolons or quotes, which servers refuse in an info value) is what the
// answer must echo.
func AppendRequest(b []byte, command string, challenge []byte) ([]byte, error) {
	if command != "getstatus" && command != "getinfo" {
		return b, errors.New("quake3: the query command is getstatus or getinfo")
	}
	if len(challenge) > MaxChallenge {
		return b, wire.NewDecodeError("challenge", 0, wire.ErrTooLong)
	}
	for _, c := range challenge {
		if c <= ' ' || c >= 0x7F || c == '\\' || c == ';' || c == '"' {
			return b, wire.NewDecodeError("challenge", 0, wire.ErrRange)
		}
	}
	b = append(b, oob...)
	b = append(b, command...)
	if len(challenge) > 0 {
		b = append(b, ' ')
		b = append(b, challenge...)
	}
	return b, nil
}

// Decode parses an answer datagram into r. It accepts a final line without
// its newline and a trailing empty line, as servers differ there.
func (r *Response) Decode(b []byte) error {
	r.Kind, r.Vars, r.Players = 0, r.Vars[:0], r.Players[:0]
	if len(b) > MaxDatagram {
		return wire.NewDecodeError("datagram", 0, wire.ErrTooLong)
	}
	if !bytes.HasPrefix(b, oob) {
		return wire.NewDecodeError("header", 0, ErrNotResponse)
	}
	off := len(oob)
	head, rest, _ := bytes.Cut(b[off:], []byte{'\n'})
	switch {
	case bytes.Equal(head, statusResponse):
		r.Kind = KindStatus
	case bytes.Equal(head, infoResponse):
		r.Kind = KindInfo
	default:
		return wire.NewDecodeError("header", off, ErrNotResponse)
	}
	off += len(head) + 1
	info, players, _ := bytes.Cut(rest, []byte{'\n'})
	if err := r.decodeInfo(info, off); err != nil {
		return err
	}
	off += len(info) + 1
	if r.Kind == KindInfo {
		if len(bytes.TrimRight(players, "\n")) != 0 {
			return wire.NewDecodeError("info", off, wire.ErrTooLong)
		}
		return nil
	}
	for len(players) > 0 {
		line, next, _ := bytes.Cut(players, []byte{'\n'})
		if len(line) > 0 {
			if len(r.Players) == MaxPlayers {
				return wire.NewDecodeError("players", off, wire.ErrTooLong)
			}
			p, err := parsePlayer(line, off)
			if err != nil {
				return err
			}
			r.Players = append(r.Players, p)
		}
		off += len(line) + 1
		players = next
	}
	return nil
}

// decodeInfo splits \key\value\… into r.Vars. A key without a value (the
// string ending after a key) has an empty value, as the engines read it.
func (r *Response) decodeInfo(info []byte, off int) error {
	if len(info) == 0 {
		return nil
	}
	if info[0] != '\\' {
		return wire.NewDecodeError("info", off, wire.ErrMagic)
	}
	p := info[1:]
	for {
		if len(r.Vars) == MaxVars {
			return wire.NewDecodeError("info", off, wire.ErrTooLong)
		}
		key, rest, found := bytes.Cut(p, []byte{'\\'})
		if !found {
			r.Vars = append(r.Vars, Var{Key: key, Value: p[len(p):]})
			return nil
		}
		value, after, more := bytes.Cut(rest, []byte{'\\'})
		r.Vars = append(r.Vars, Var{Key: key, Value: value})
		if !more {
			return nil
		}
		p = after
	}
}

// parsePlayer reads `score ping "name"` with an optional team number after
// the name. The name runs from the first to the last quote on the line.
func parsePlayer(line []byte, off int) (Player, error) {
	var p Player
	var ok bool
	i := 0
	if p.Score, i, ok = parseInt(line, i); !ok || i >= len(line) || line[i] != ' ' {
		return p, wire.NewDecodeError("player score", off, wire.ErrRange)
	}
	if p.Ping, i, ok = parseInt(line, i+1); !ok || i >= len(line) || line[i] != ' ' {
		return p, wire.NewDecodeError("player ping", off+i, wire.ErrRange)
	}
	i++
	last := bytes.LastIndexByte(line, '"')
	if i >= len(line) || line[i] != '"' || last <= i {
		return p, wire.NewDecodeError("player name", off+i, wire.ErrMagic)
	}
	p.Name = line[i+1 : last : last]
	tail := line[last+1:]
	if len(tail) == 0 {
		return p, nil
	}
	if tail[0] != ' ' {
		return p, wire.NewDecodeError("player team", off+last+1, wire.ErrMagic)
	}
	var j int
	if p.Team, j, ok = parseInt(tail, 1); !ok || j != len(tail) {
		return p, wire.NewDecodeError("player team", off+last+1, wire.ErrRange)
	}
	p.HasTeam = true
	return p, nil
}

// parseInt reads an optionally negative decimal of at most 9 digits from
// b[i:], returning the value and the index after it.
func parseInt(b []byte, i int) (int, int, bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start, v := i, 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start == 9 {
			return 0, i, false
		}
		v = v*10 + int(b[i]-'0')
		i++
	}
	if i == start {
		return 0, i, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// AppendTo appends r as a server sends it. Keys and values must not hold a
// backslash or newline and names no newline, or the result would not
// decode to r.
func (r *Response) AppendTo(b []byte) ([]byte, error) {
	b = append(b, oob...)
	switch r.Kind {
	case KindStatus:
		b = append(b, statusResponse...)
	case KindInfo:
		b = append(b, infoResponse...)
	default:
		return b, errors.New("quake3: response kind not set")
	}
	b = append(b, '\n')
	for _, v := range r.Vars {
		if bytes.ContainsAny(v.Key, "\\\n") || bytes.ContainsAny(v.Value, "\\\n") {
			return b, errors.New("quake3: an info key or value holds a backslash or newline")
		}
		b = append(b, '\\')
		b = append(b, v.Key...)
		b = append(b, '\\')
		b = append(b, v.Value...)
	}
	if r.Kind == KindInfo {
		return b, nil
	}
	b = append(b, '\n')
	for _, p := range r.Players {
		if bytes.IndexByte(p.Name, '\n') >= 0 {
			return b, errors.New("quake3: a player name holds a newline")
		}
		b = appendInt(b, p.Score)
		b = append(b, ' ')
		b = appendInt(b, p.Ping)
		b = append(b, ' ', '"')
		b = append(b, p.Name...)
		b = append(b, '"')
		if p.HasTeam {
			b = append(b, ' ')
			b = appendInt(b, p.Team)
		}
		b = append(b, '\n')
	}
	return b, nil
}

func appendInt(b []byte, v int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// AppendPlainName appends name without its colour codes: "^" and any one
// character but "^" (ioquake3, OpenArena), and DarkPlaces' "^x" with three
// hex digits. Control characters are dropped too. A caret before a caret
// stays, as in ioquake3's Q_CleanStr.
func AppendPlainName(dst, name []byte) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '^' && i+1 < len(name) && name[i+1] != '^' {
			if name[i+1] == 'x' && i+4 < len(name) && isHex(name[i+2]) && isHex(name[i+3]) && isHex(name[i+4]) {
				i += 4
			} else {
				i++
			}
			continue
		}
		if c < 0x20 || c == 0x7F {
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
