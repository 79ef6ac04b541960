// Package farmingsimulator is the codec of the Farming Simulator dedicated
// server's statistics feed (its web interface's
// /feed/dedicated-server-stats.xml), free of I/O: an XML document
//
//	<Server name="…" mapName="…" version="…" …>
//	  <Slots capacity="16" numUsed="2">
//	    <Player isUsed="true" isAdmin="false" uptime="12" x="…" y="…" z="…">name</Player>
//	    <Player isUsed="false"/> …
//	  </Slots>
//	  <Mods><Mod name="short" author="…" version="…" hash="…">Title</Mod> …</Mods>
//	</Server>
//
// as GameDig 5.3.3's protocols/farmingsimulator.js reads it.
package farmingsimulator

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what the decoder accepts.
const (
	// MaxSize is the largest document decoded.
	MaxSize = 1 << 20
	// MaxPlayers and MaxMods bound the slots and mods kept.
	MaxPlayers = 1024
	MaxMods    = 4096
	// maxDepth bounds the nesting of elements.
	maxDepth = 64
)

// ErrNotStats reports a document that is not a statistics feed.
var ErrNotStats = errors.New("not a Farming Simulator server statistics feed")

// Stats is a decoded feed. Absent attributes are empty; Has* say which
// were present, as GameDig tells an absent attribute from an empty one.
type Stats struct {
	Name, MapName, Version      string
	HasName, HasMap, HasVersion bool
	// NumUsed and Capacity are the Slots element's attributes as sent.
	NumUsed, Capacity string
	Players           []Player
	Mods              []Mod
}

// Player is one Player element of Slots.
type Player struct {
	Name            string // its text, trimmed
	IsUsed, IsAdmin string
	Uptime, X, Y, Z string
	HasIsUsed       bool
}

// Mod is one Mod element of Mods.
type Mod struct {
	Title                       string // its text, trimmed
	Name, Author, Version, Hash string
	HasName                     bool
}

// Decode parses a feed into s. Text is UTF-8 (the feed's encoding).
func (s *Stats) Decode(b []byte) error {
	*s = Stats{Players: s.Players[:0], Mods: s.Mods[:0]}
	if len(b) > MaxSize {
		return wire.NewDecodeError("document", 0, wire.ErrTooLong)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var path []string // element names from the root
	var text *string
	var buf []byte
	seenRoot := false
	for {
		off := int(d.InputOffset())
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return wire.NewDecodeError("document", min(off, len(b)), ErrNotStats)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(path) == maxDepth {
				return wire.NewDecodeError("document", off, wire.ErrTooLong)
			}
			name := t.Name.Local
			if len(path) == 0 {
				if seenRoot || name != "Server" {
					return wire.NewDecodeError("Server", off, ErrNotStats)
				}
				seenRoot = true
				s.Name, s.HasName = attr(t, "name")
				s.MapName, s.HasMap = attr(t, "mapName")
				s.Version, s.HasVersion = attr(t, "version")
			}
			path = append(path, name)
			text = nil
			switch {
			case is(path, "Server", "Slots"):
				s.NumUsed, _ = attr(t, "numUsed")
				s.Capacity, _ = attr(t, "capacity")
			case is(path, "Server", "Slots", "Player"):
				if len(s.Players) == MaxPlayers {
					return wire.NewDecodeError("Player", off, wire.ErrTooLong)
				}
				p := Player{}
				p.IsUsed, p.HasIsUsed = attr(t, "isUsed")
				p.IsAdmin, _ = attr(t, "isAdmin")
				p.Uptime, _ = attr(t, "uptime")
				p.X, _ = attr(t, "x")
				p.Y, _ = attr(t, "y")
				p.Z, _ = attr(t, "z")
				s.Players = append(s.Players, p)
				text, buf = &s.Players[len(s.Players)-1].Name, buf[:0]
			case is(path, "Server", "Mods", "Mod"):
				if len(s.Mods) == MaxMods {
					return wire.NewDecodeError("Mod", off, wire.ErrTooLong)
				}
				m := Mod{}
				m.Name, m.HasName = attr(t, "name")
				m.Author, _ = attr(t, "author")
				m.Version, _ = attr(t, "version")
				m.Hash, _ = attr(t, "hash")
				s.Mods = append(s.Mods, m)
				text, buf = &s.Mods[len(s.Mods)-1].Title, buf[:0]
			}
		case xml.EndElement:
			if len(path) == 0 || path[len(path)-1] != t.Name.Local {
				return wire.NewDecodeError(t.Name.Local, off, ErrNotStats)
			}
			if text != nil {
				*text = string(bytes.TrimSpace(buf))
				text = nil
			}
			path = path[:len(path)-1]
		case xml.CharData:
			if text != nil {
				buf = append(buf, t...)
			} else if len(path) == 0 && len(bytes.TrimSpace(t)) > 0 {
				return wire.NewDecodeError("document", off, ErrNotStats)
			}
		}
	}
	if !seenRoot || len(path) != 0 {
		return wire.NewDecodeError("Server", len(b), wire.ErrTruncated)
	}
	return nil
}

func is(path []string, want ...string) bool {
	if len(path) != len(want) {
		return false
	}
	for i := range want {
		if path[i] != want[i] {
			return false
		}
	}
	return true
}

func attr(e xml.StartElement, name string) (string, bool) {
	for _, a := range e.Attr {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}
