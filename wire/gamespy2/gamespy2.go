// Package gamespy2 is the GameSpy 2 query protocol's codec (Unreal
// Tournament 2003 and 2004's GameSpy port, America's Army, Battlefield
// Vietnam, Halo, SWAT 4, Neverwinter Nights…): a request FE FD 00 <id>
// with three flags asking the server's keys, its players and its teams,
// and an answer 00 <id> whose body holds NUL-terminated keys and values,
// or a table: field names, then rows of values.
package gamespy2

import (
	"encoding/binary"

	"github.com/gamegate/gamegate/wire"
)

// headerLen is an answer's leading 00 and its ID.
const headerLen = 5

// The sections a request asks, one flag byte each.
const (
	SectionInfo = iota
	SectionPlayers
	SectionTeams
)

// AppendRequest appends a request with id for section.
func AppendRequest(b []byte, id uint32, section int) []byte {
	b = binary.BigEndian.AppendUint32(append(b, 0xFE, 0xFD, 0x00), id)
	flags := [3]byte{}
	if section >= 0 && section < len(flags) {
		flags[section] = 0xFF
	}
	return append(b, flags[:]...)
}

// Answer returns an answer's ID and body (aliasing b): the cheap peek.
func Answer(b []byte) (id uint32, body []byte, ok bool) {
	if len(b) < headerLen || b[0] != 0 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint32(b[1:headerLen]), b[headerLen:], true
}

// AppendAnswer appends an answer with id and body.
func AppendAnswer(b []byte, id uint32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(append(b, 0), id), body...)
}

// MaxItems bounds the keys, values and fields one body may hold (a 64 KiB
// body of empty strings holds at most 65536).
const MaxItems = 65536

// Pair is one key and value; both alias the body.
type Pair struct{ Key, Value []byte }

// DecodeInfo appends the body's keys and values to pairs, up to an empty
// key or the body's end; a key or value cut short ends them.
func DecodeInfo(pairs []Pair, body []byte) ([]Pair, error) {
	r := wire.NewReader(body)
	for r.Len() > 0 {
		k, v := r.CString("key"), r.CString("value")
		if len(k) == 0 {
			break
		}
		if len(pairs) == MaxItems {
			return pairs, wire.NewDecodeError("pairs", r.Offset(), wire.ErrTooLong)
		}
		pairs = append(pairs, Pair{k, v})
	}
	return pairs, nil
}

// Table is a players' or teams' section: its field names and its rows'
// values, row after row, each row as many values as there are fields, all
// aliasing the body. Its slices are reused from one Decode to the next,
// so decoding into a Table allocates nothing once they have grown.
type Table struct {
	Fields [][]byte
	Values [][]byte
}

// Rows is the number of rows.
func (t *Table) Rows() int {
	if len(t.Fields) == 0 {
		return 0
	}
	return len(t.Values) / len(t.Fields)
}

// Row returns row i's values, one for each field.
func (t *Table) Row(i int) [][]byte { return t.Values[i*len(t.Fields) : (i+1)*len(t.Fields)] }

// Decode reads a table: a 00, a row count byte (which some games leave
// out; a byte over 64 is taken as the first field's), the field names up
// to an empty one, then rows up to one whose first value is empty or the
// body's end. t's slices are reused.
func (t *Table) Decode(body []byte) error {
	t.Fields, t.Values = t.Fields[:0], t.Values[:0]
	r := wire.NewReader(body)
	r.U8("zero")
	if count := r.U8("count"); r.Err() == nil && count > 64 {
		r = wire.NewReader(body[1:])
	}
	if err := r.Err(); err != nil {
		return err
	}
	items := 0
	for r.Len() > 0 {
		f := r.CString("field")
		if len(f) == 0 {
			break
		}
		if items++; items > MaxItems {
			return wire.NewDecodeError("fields", r.Offset(), wire.ErrTooLong)
		}
		t.Fields = append(t.Fields, f)
	}
	if len(t.Fields) == 0 {
		return nil
	}
	for r.Len() > 0 {
		start := len(t.Values)
		for range t.Fields {
			t.Values = append(t.Values, r.CString("value"))
			if items++; items > MaxItems {
				return wire.NewDecodeError("values", r.Offset(), wire.ErrTooLong)
			}
		}
		if len(t.Values[start]) == 0 {
			t.Values = t.Values[:start] // no more rows
			break
		}
	}
	return nil
}
