// Package gamespy1 is the GameSpy 1 query protocol's codec (Unreal,
// Unreal Tournament, Battlefield 1942, Medal of Honor and some seventy
// other games): a request such as \status\ and answers of backslash-
// separated keys and values, \key\value\key\value…, split over several
// datagrams numbered by \queryid\<id>.<part>, the last marked \final\.
package gamespy1

import (
	"bytes"
	"strconv"

	"github.com/gamegate/gamegate/wire"
)

// StatusRequest asks for the server's rules and players; \xserverquery
// asks servers that know it (Unreal engine games) for their extended
// answer, and others ignore it.
const StatusRequest = `\status\xserverquery`

// MaxPairs is the most key/value pairs one datagram may hold: a 64 KiB
// datagram of empty pairs has at most 32768.
const MaxPairs = 32768

// Pair is a key and its value; both alias the datagram.
type Pair struct{ Key, Value []byte }

// Packet is one answer datagram.
type Packet struct {
	// Pairs are the datagram's keys and values, in order, without
	// queryid and final.
	Pairs []Pair
	// QueryID is the query ID before the dot of \queryid\ (empty when
	// absent); Part the number after it, 0 when absent or not a number.
	QueryID []byte
	Part    int
	// Final is whether the datagram carries \final\: it is the last part.
	Final bool
}

// IsAnswer reports whether b may be an answer: it starts with a
// backslash.
func IsAnswer(b []byte) bool { return len(b) > 0 && b[0] == '\\' }

// Decode parses b into p, reusing p.Pairs; the pairs alias b. A key
// without a value (the datagram ends after it) has an empty value.
func (p *Packet) Decode(b []byte) error {
	*p = Packet{Pairs: p.Pairs[:0]}
	if !IsAnswer(b) {
		return wire.NewDecodeError("start", 0, wire.ErrMagic)
	}
	for off := 1; off <= len(b); {
		key, n := field(b[off:])
		off += n
		value, n := field(b[min(off, len(b)):])
		off += n
		switch {
		case string(key) == "final":
			p.Final = true
		case string(key) == "queryid":
			id, part, _ := bytes.Cut(value, []byte{'.'})
			p.QueryID = id
			if n, err := strconv.Atoi(string(part)); err == nil && n > 0 && n <= MaxPairs {
				p.Part = n
			}
		default:
			if len(p.Pairs) == MaxPairs {
				return wire.NewDecodeError("pairs", off, wire.ErrTooLong)
			}
			p.Pairs = append(p.Pairs, Pair{key, value})
		}
		if off >= len(b) {
			break
		}
	}
	return nil
}

// field returns the text up to the next backslash and the bytes it took,
// the backslash included.
func field(b []byte) ([]byte, int) {
	if i := bytes.IndexByte(b, '\\'); i >= 0 {
		return b[:i:i], i + 1
	}
	return b[:len(b):len(b)], len(b)
}

// AppendTo appends p as a datagram: its pairs, then \final\ if Final,
// then \queryid\<id>.<part> if QueryID is set. Keys and values must not
// hold backslashes.
func (p *Packet) AppendTo(b []byte) []byte {
	for _, kv := range p.Pairs {
		b = append(append(append(append(b, '\\'), kv.Key...), '\\'), kv.Value...)
	}
	if p.Final {
		b = append(b, `\final\`...)
	}
	if len(p.QueryID) > 0 {
		b = append(append(b, `\queryid\`...), p.QueryID...)
		b = strconv.AppendInt(append(b, '.'), int64(p.Part), 10)
	}
	return b
}
