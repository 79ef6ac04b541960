// Package gamespy3 is the GameSpy 3 query protocol's codec (Battlefield 2
// and 2142, Crysis, S.T.A.L.K.E.R., and GameSpy 4's variant that
// Minecraft's enable-query speaks): requests FE FD <type> <session>,
// a challenge (type 9) answered as a decimal string, and a full status
// (type 0 with FF FF FF 01) answered in datagrams numbered by "splitnum",
// whose bodies hold NUL-terminated keys and values, then field columns.
package gamespy3

import (
	"encoding/binary"
	"strconv"

	"github.com/gamegate/gamegate/wire"
)

// The request types.
const (
	TypeStatus    = 0x00
	TypeChallenge = 0x09
)

// headerLen is an answer's type and session ID; splitLen the "splitnum\0"
// filler, the part byte and the byte after it.
const (
	headerLen = 5
	splitLen  = 11
)

// LastPart marks the last part in a split answer's part byte.
const LastPart = 0x80

// AppendRequest appends a request of typ for session, with the challenge
// when hasChallenge and, for a status, the payload asking every section.
func AppendRequest(b []byte, typ byte, session uint32, challenge int32, hasChallenge bool) []byte {
	b = binary.BigEndian.AppendUint32(append(b, 0xFE, 0xFD, typ), session)
	if hasChallenge {
		b = binary.BigEndian.AppendUint32(b, uint32(challenge))
	}
	if typ == TypeStatus {
		b = append(b, 0xFF, 0xFF, 0xFF, 0x01)
	}
	return b
}

// Peek returns an answer's type and session ID: the cheap test of whose
// answer a datagram is.
func Peek(b []byte) (typ byte, session uint32, ok bool) {
	if len(b) < headerLen {
		return 0, 0, false
	}
	return b[0], binary.BigEndian.Uint32(b[1:headerLen]), true
}

// Challenge reads a challenge answer: the decimal challenge after the
// header (0: the server wants none).
func Challenge(b []byte) (int32, error) {
	r := wire.NewReader(b)
	r.Skip("header", headerLen)
	s := r.CString("challenge")
	if err := r.Err(); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil || n < -1<<31 || n > 1<<32-1 {
		return 0, wire.NewDecodeError("challenge", headerLen, wire.ErrRange)
	}
	return int32(uint32(n)), nil
}

// Part reads a status answer's part: its number, whether it is the last,
// and its body (aliasing b).
func Part(b []byte) (n int, last bool, body []byte, err error) {
	if len(b) < headerLen+splitLen {
		return 0, false, nil, wire.NewDecodeError("split header", len(b), wire.ErrTruncated)
	}
	id := b[headerLen+9]
	return int(id &^ LastPart), id&LastPart != 0, b[headerLen+splitLen:], nil
}

// AppendPart appends a status answer's part n for session.
func AppendPart(b []byte, session uint32, n int, last bool, body []byte) []byte {
	id := byte(n) &^ LastPart
	if last {
		id |= LastPart
	}
	b = binary.BigEndian.AppendUint32(append(b, TypeStatus), session)
	return append(append(append(b, "splitnum\x00"...), id, 0), body...)
}

// Pair is one key and value of the first part; both alias the body.
type Pair struct{ Key, Value []byte }

// Column is one field of the player, team or other item lists: its name
// ("player_", "score_", "team_t"…), the index of its first value, and
// where its values are in the Body's Values.
type Column struct {
	Name         []byte
	Offset       int
	First, Count int
}

// MaxItems bounds the pairs and values one body may hold (a 64 KiB body
// of empty strings holds at most 65536).
const MaxItems = 65536

// Body is a status part's body, decoded. Its slices are reused from one
// Decode to the next, so decoding into a Body allocates nothing once they
// have grown.
type Body struct {
	Pairs   []Pair
	Columns []Column
	// Values are every column's values, each column's in a run.
	Values [][]byte
}

// ColumnValues returns c's values.
func (d *Body) ColumnValues(c Column) [][]byte { return d.Values[c.First : c.First+c.Count] }

// Decode reads a body, reusing b's slices; pairs are read only when
// first (the first part holds them). Everything aliases body. A body cut
// short keeps what was whole, as GameDig reads it.
func (d *Body) Decode(body []byte, first bool) error {
	d.Pairs, d.Columns, d.Values = d.Pairs[:0], d.Columns[:0], d.Values[:0]
	r := wire.NewReader(body)
	items := 0
	if first {
		for r.Len() > 0 {
			k := r.CString("key")
			if len(k) == 0 {
				break
			}
			v := r.CString("value")
			for isUT3Key(v) && r.Len() > 0 { // UT3 sends some keys without values
				v = r.CString("value")
			}
			if items++; items > MaxItems {
				return wire.NewDecodeError("pairs", r.Offset(), wire.ErrTooLong)
			}
			d.Pairs = append(d.Pairs, Pair{k, v})
		}
	}
	for r.Len() > 0 && r.Err() == nil {
		if rest := r.Rest(); rest[0] <= 2 {
			r = wire.NewReader(rest[1:])
			continue
		} else {
			r = wire.NewReader(rest)
		}
		name := r.CString("field")
		if len(name) == 0 {
			continue
		}
		c := Column{Name: name, Offset: int(r.U8("offset")), First: len(d.Values)}
		for r.Len() > 0 {
			v := r.CString("value")
			if len(v) == 0 {
				break
			}
			if items++; items > MaxItems {
				return wire.NewDecodeError("values", r.Offset(), wire.ErrTooLong)
			}
			d.Values = append(d.Values, v)
			c.Count++
		}
		d.Columns = append(d.Columns, c)
	}
	return nil
}

// isUT3Key reports whether v is "p" and digits, a key UT3 sends where a
// value belongs.
func isUT3Key(v []byte) bool {
	if len(v) < 2 || v[0] != 'p' {
		return false
	}
	for _, c := range v[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
