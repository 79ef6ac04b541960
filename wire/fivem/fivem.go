// Package fivem is the codec of the HTTP documents a FiveM or RedM server
// (Cfx.re's FXServer) serves beside its getinfo answer (wire/quake2's
// FiveM dialect), free of I/O: /info.json, the server's description (its
// version, resources and public variables), and /players.json, an array
// of the players connected ({"name", "id", "ping", "identifiers",
// "endpoint"}), read as GameDig 5.3.3's protocols/fivem.js reads them.
package fivem

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what the decoders accept.
const (
	// MaxSize is the largest document decoded.
	MaxSize = 1 << 20
	// MaxPlayers bounds the players read (FXServer's own bound is 2048).
	MaxPlayers = 4096
)

// ErrNotJSON reports a document that is not JSON.
var ErrNotJSON = errors.New("not a JSON document")

// decode parses one JSON value, the whole of b, into a tree of
// map[string]any, []any, string, float64, bool and nil, as JavaScript's
// JSON.parse reads it.
func decode(field string, b []byte) (any, error) {
	if len(b) > MaxSize {
		return nil, wire.NewDecodeError(field, 0, wire.ErrTooLong)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		off := len(b)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(min(max(se.Offset, 0), int64(len(b))))
		}
		return nil, wire.NewDecodeError(field, off, ErrNotJSON)
	}
	return v, nil
}

// Info is /info.json decoded: the document as sent.
type Info struct {
	// Doc is the whole document.
	Doc any
	// Version is its top-level version, when it is an object with one.
	Version    any
	HasVersion bool
}

// Decode parses /info.json into i.
func (i *Info) Decode(b []byte) error {
	*i = Info{}
	doc, err := decode("info.json", b)
	if err != nil {
		return err
	}
	i.Doc = doc
	if m, ok := doc.(map[string]any); ok {
		i.Version, i.HasVersion = m["version"]
	}
	return nil
}

// Player is one entry of /players.json as GameDig keeps it: its name (a
// string; empty when absent or not a string) and its ping as sent.
type Player struct {
	Name    string
	Ping    any
	HasPing bool
}

// Players is /players.json decoded.
type Players struct {
	// Doc is the whole document.
	Doc any
	// List are its entries that are objects, in order.
	List []Player
}

// Decode parses /players.json into p: an array of at most MaxPlayers
// entries.
func (p *Players) Decode(b []byte) error {
	*p = Players{List: p.List[:0]}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return wire.NewDecodeError("players.json", 0, ErrNotJSON)
	}
	doc, err := decode("players.json", b)
	if err != nil {
		return err
	}
	list, _ := doc.([]any)
	if len(list) > MaxPlayers {
		return wire.NewDecodeError("players.json", 0, wire.ErrTooLong)
	}
	p.Doc = doc
	for _, e := range list {
		m, _ := e.(map[string]any)
		var pl Player
		pl.Name, _ = m["name"].(string)
		pl.Ping, pl.HasPing = m["ping"]
		p.List = append(p.List, pl)
	}
	return nil
}
