// Package quake2 is the codec of the status query of Quake 2 and of Quake
// 1's QuakeWorld (id Software's connectionless "status" command, as
// Yamagi, q2pro, mvdsv, ezQuake and their games answer it), free of I/O.
//
// A query is four 0xFF bytes and "status". The answers are
//
//	FF FF FF FF "print\n" info "\n" (frags ping "name" [address] "\n")*   Quake 2
//	FF FF FF FF "n" info "\n" (id frags time ping "name" "skin" top bottom "\n")*   QuakeWorld
//
// where info is an info string, \key\value\key\value…, and text is
// Windows-1252 (Quake's "gold" characters are its high half).
//
// FiveM and RedM servers (Cfx.re's, on id Tech's connectionless packets)
// answer "getinfo xxx" in the Quake 2 layout with another header, in
// UTF-8:
//
//	FF FF FF FF "infoResponse\n" info ["\n" player lines]   FiveM
package quake2

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/gamegate/gamegate/wire"
)

// Dialect says which game's answer a Response holds.
type Dialect uint8

// The dialects.
const (
	Quake2 Dialect = iota + 1
	QuakeWorld
	// FiveM is the getinfo answer of FiveM and RedM servers: Quake 2's
	// layout under the header infoResponse.
	FiveM
)

// Limits that bound what a decoder accepts and keeps.
const (
	MaxDatagram = 65507
	MaxVars     = 1024
	MaxPlayers  = 256
	// maxDigits bounds a number: 9 digits and a sign.
	maxDigits = 9
)

// ErrNotResponse reports a datagram that is not a status answer.
var ErrNotResponse = errors.New("not a Quake 2 or QuakeWorld status answer")

var (
	oob         = []byte{0xFF, 0xFF, 0xFF, 0xFF}
	printHeader = []byte("print\n")
	qwHeader    = []byte("n")
	fiveMHeader = []byte("infoResponse\n")
)

// Request is the status query both games answer.
const Request = "\xff\xff\xff\xffstatus\x00"

// FiveMRequest is the info query FiveM and RedM answer (GameDig's, with
// its challenge "xxx").
const FiveMRequest = "\xff\xff\xff\xffgetinfo xxx\x00"

// header is dialect d's answer header after the four 0xFF bytes.
func header(d Dialect) []byte {
	switch d {
	case QuakeWorld:
		return qwHeader
	case FiveM:
		return fiveMHeader
	}
	return printHeader
}

// LooksLikeResponse reports whether b starts as an answer of dialect d.
func LooksLikeResponse(b []byte, d Dialect) bool {
	return bytes.HasPrefix(b, oob) && bytes.HasPrefix(b[len(oob):], header(d))
}

// Var is one key/value pair of an info string.
type Var struct {
	Key, Value []byte
}

// Player is one player line. Quake 2 fills Frags, Ping, Name and Address;
// QuakeWorld ID, Frags, Time, Ping, Name, Skin, Top and Bottom.
type Player struct {
	ID, Frags, Time, Ping, Top, Bottom int
	Name, Skin, Address                []byte
	// HasAddress says a Quake 2 line had an address after the name.
	HasAddress bool
}

// Response is a decoded answer. Decode fills it in place, reusing its
// slices; its byte slices alias the datagram.
type Response struct {
	Dialect Dialect
	Vars    []Var
	Players []Player
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

// Decode parses an answer of dialect d into r. Its info string is read
// as GameDig reads one: a key without a value (the string ending after
// it) is dropped. Player lines end at the first empty line or one
// starting with a NUL.
func (r *Response) Decode(b []byte, d Dialect) error {
	r.Dialect, r.Vars, r.Players = d, r.Vars[:0], r.Players[:0]
	if len(b) > MaxDatagram {
		return wire.NewDecodeError("datagram", 0, wire.ErrTooLong)
	}
	if !LooksLikeResponse(b, d) {
		return wire.NewDecodeError("header", 0, ErrNotResponse)
	}
	off := len(oob) + len(header(d))
	info, rest, _ := bytes.Cut(b[off:], []byte{'\n'})
	if err := r.decodeInfo(info, off); err != nil {
		return err
	}
	off += len(info) + 1
	for len(rest) > 0 {
		line, next, _ := bytes.Cut(rest, []byte{'\n'})
		if len(line) == 0 || line[0] == 0 {
			break
		}
		if len(r.Players) == MaxPlayers {
			return wire.NewDecodeError("players", off, wire.ErrTooLong)
		}
		p, err := parsePlayer(line, d, off)
		if err != nil {
			return err
		}
		r.Players = append(r.Players, p)
		off += len(line) + 1
		rest = next
	}
	return nil
}

func (r *Response) decodeInfo(info []byte, off int) error {
	p := info
	if len(p) > 0 && p[0] == '\\' {
		p = p[1:]
	}
	for len(p) > 0 {
		key, rest, found := bytes.Cut(p, []byte{'\\'})
		if !found {
			return nil // a key without a value
		}
		if len(r.Vars) == MaxVars {
			return wire.NewDecodeError("info", off, wire.ErrTooLong)
		}
		value, after, _ := bytes.Cut(rest, []byte{'\\'})
		r.Vars = append(r.Vars, Var{Key: key, Value: value})
		p = after
	}
	return nil
}

// tokens splits a player line as GameDig does: quoted parts are tokens
// whole, the rest split at spaces. A quote left open ends ok false.
func tokens(line []byte, out [][]byte) ([][]byte, bool) {
	for i := 0; i < len(line); {
		switch line[i] {
		case ' ':
			i++
		case '"':
			end := bytes.IndexByte(line[i+1:], '"')
			if end < 0 {
				return out, false
			}
			if len(out) == cap(out) {
				return out, false
			}
			out = append(out, line[i+1:i+1+end:i+1+end])
			i += end + 2
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '"' {
				j++
			}
			if len(out) == cap(out) {
				return out, false
			}
			out = append(out, line[i:j:j])
			i = j
		}
	}
	return out, true
}

// parsePlayer reads one line of dialect d; every number must be one.
func parsePlayer(line []byte, d Dialect, off int) (Player, error) {
	var buf [9][]byte
	t, closed := tokens(line, buf[:0])
	var p Player
	if !closed {
		return p, wire.NewDecodeError("player", off, wire.ErrMagic)
	}
	ok := true
	num := func(tok []byte) int {
		v, good := parseInt(tok)
		ok = ok && good
		return v
	}
	switch {
	case d == QuakeWorld && len(t) == 8:
		p.ID, p.Frags, p.Time, p.Ping = num(t[0]), num(t[1]), num(t[2]), num(t[3])
		p.Name, p.Skin = t[4], t[5]
		p.Top, p.Bottom = num(t[6]), num(t[7])
	case d != QuakeWorld && (len(t) == 3 || len(t) == 4):
		p.Frags, p.Ping, p.Name = num(t[0]), num(t[1]), t[2]
		if len(t) == 4 {
			p.Address, p.HasAddress = t[3], true
		}
	default:
		return p, wire.NewDecodeError("player", off, wire.ErrMagic)
	}
	if !ok {
		return p, wire.NewDecodeError("player number", off, wire.ErrRange)
	}
	return p, nil
}

// parseInt reads an optionally negative decimal of at most maxDigits
// digits, the whole of b.
func parseInt(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > maxDigits {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// AppendTo appends r as a server sends it. Keys and values hold no
// backslash or newline, and names, skins and addresses no quote or
// newline, or the result would not decode to
// r.
func (r *Response) AppendTo(b []byte) ([]byte, error) {
	b = append(append(b, oob...), header(r.Dialect)...)
	for _, v := range r.Vars {
		if bytes.ContainsAny(v.Key, "\\\n") || bytes.ContainsAny(v.Value, "\\\n") {
			return b, errors.New("quake2: an info key or value holds a backslash or newline")
		}
		b = append(append(append(append(b, '\\'), v.Key...), '\\'), v.Value...)
	}
	b = append(b, '\n')
	for _, p := range r.Players {
		for _, s := range [][]byte{p.Name, p.Skin, p.Address} {
			if bytes.ContainsAny(s, "\"\n") {
				return b, errors.New("quake2: a player's text holds a quote or newline")
			}
		}
		if r.Dialect == QuakeWorld {
			b = strconv.AppendInt(b, int64(p.ID), 10)
			for _, n := range []int{p.Frags, p.Time, p.Ping} {
				b = strconv.AppendInt(append(b, ' '), int64(n), 10)
			}
			b = append(append(append(append(append(append(b, ` "`...), p.Name...), `" "`...), p.Skin...), '"'), ' ')
			b = strconv.AppendInt(b, int64(p.Top), 10)
			b = strconv.AppendInt(append(b, ' '), int64(p.Bottom), 10)
		} else {
			b = strconv.AppendInt(b, int64(p.Frags), 10)
			b = strconv.AppendInt(append(b, ' '), int64(p.Ping), 10)
			b = append(append(append(b, ` "`...), p.Name...), '"')
			if p.HasAddress {
				b = append(append(append(b, ` "`...), p.Address...), '"')
			}
		}
		b = append(b, '\n')
	}
	return b, nil
}
