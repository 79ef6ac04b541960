package serverlist

import (
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/gamegate/gamegate/handlers/query"
)

// maxText bounds, as encoded in JSON, each text of a status cut by
// CutStatus: its name, map, version, protocol and addresses.
const maxText = 256

// CutStatus returns st if it encodes in at most size bytes, else a copy
// that does, and true: its texts shortened to maxText encoded bytes, and
// of its players, bots and raw variables (by name) those that fit, in
// order; the counts (numplayers, maxplayers) stay as the server said.
// size must leave room for the texts and counts (MinMaxStatusSize).
// st is not changed; the copy shares its players' and values' contents.
func CutStatus(st *query.Status, size int) (*query.Status, bool) {
	b, err := json.Marshal(st)
	if err == nil && len(b) <= size {
		return st, false
	}
	c := *st
	for _, t := range []*string{&c.Name, &c.Map, &c.Version, &c.Protocol, &c.Connect, &c.Address} {
		*t = cutText(*t, maxText)
	}
	c.Players, c.Bots, c.Raw = []query.Player{}, []query.Player{}, map[string]any{}
	room := size - encodedLen(&c)
	// fit takes the room of v and extra bytes (a comma, a key), if any
	// is left.
	fit := func(v any, extra int) bool {
		if atLeast(v)+extra > room {
			return false // without encoding it
		}
		n := encodedLen(v)
		if n < 0 || extra < 0 || n+extra > room {
			return false
		}
		room -= n + extra
		return true
	}
	for _, list := range []struct{ from, to *[]query.Player }{{&st.Players, &c.Players}, {&st.Bots, &c.Bots}} {
		for _, p := range *list.from {
			if fit(p, 1) {
				*list.to = append(*list.to, p)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.Raw)) {
		if len(k)+4 <= room && fit(st.Raw[k], encodedLen(k)+2) { // the key, its colon, a comma
			c.Raw[k] = st.Raw[k]
		}
	}
	return &c, true
}

// atLeast is a lower bound of v's length in JSON, cheap to take.
func atLeast(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 2
	case query.Player:
		return len(v.Name) + len(`{"name":"","raw":{}}`)
	}
	return 1
}

// encodedLen is the length of v in JSON, -1 if it does not encode.
func encodedLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return -1
	}
	return len(b)
}

// cutText returns s cut, at a character, to encode in JSON (quotes
// included, as encoding/json escapes) in at most n bytes.
func cutText(s string, n int) string {
	used := 2 // the quotes
	for i, r := range s {
		w := 6 // \u00XX, \ufffd for invalid UTF-8, \u2028, \u003c
		switch {
		case r == utf8.RuneError:
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			w = 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		default:
			w = utf8.RuneLen(r)
		}
		if used+w > n {
			return s[:i]
		}
		used += w
	}
	return s
}
