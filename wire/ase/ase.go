// Package ase is the codec of the All-Seeing-Eye server query (GameSpy
// Arcade's ASE: Multi Theft Auto, Far Cry, Chrome, Painkiller and other
// games), free of I/O.
//
// A query is the one byte "s". The answer is
//
//	"EYE1" game port name gametype map version password players maxplayers
//	(key value)* "" (flags player-field*)*
//
// where every field is an ASE string: a length byte that counts itself,
// then that many bytes less one (a length byte of 0 or 1 is an empty
// string). Each player starts with a flags byte whose bits say which of
// its fields follow, in the order name (1), team (2), skin (4), score (8),
// ping (16) and time (32). The game's server usually listens for queries
// on its game port plus 123.
package ase

import (
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what a decoder accepts and keeps.
const (
	// MaxDatagram is the largest answer accepted: a UDP payload.
	MaxDatagram = 65507
	// MaxRules bounds the key/value pairs of an answer.
	MaxRules = 1024
	// MaxPlayers bounds the players of an answer (one byte each at least).
	MaxPlayers = 1024
	// headerLen is "EYE1".
	headerLen = 4
)

// Flags of a player record: which of its fields follow.
const (
	FlagName  = 1 << 0
	FlagTeam  = 1 << 1
	FlagSkin  = 1 << 2
	FlagScore = 1 << 3
	FlagPing  = 1 << 4
	FlagTime  = 1 << 5
)

// Request is the query datagram.
const Request = "s"

// ErrNotResponse reports a datagram that is not an ASE answer.
var ErrNotResponse = errors.New("not an All-Seeing-Eye answer")

// LooksLikeRequest reports whether b is an ASE query.
func LooksLikeRequest(b []byte) bool { return len(b) == 1 && b[0] == 's' }

// LooksLikeResponse reports whether b starts as an ASE answer does.
func LooksLikeResponse(b []byte) bool {
	return len(b) >= headerLen && string(b[:headerLen]) == "EYE1"
}

// Rule is one key/value pair of an answer.
type Rule struct {
	Key, Value []byte
}

// Player is one player record. Fields whose flag is not set are nil.
type Player struct {
	Flags                               byte
	Name, Team, Skin, Score, Ping, Time []byte
}

// fields returns pointers to p's fields in wire order, with their flags.
func (p *Player) fields() [6]struct {
	flag byte
	v    *[]byte
} {
	return [6]struct {
		flag byte
		v    *[]byte
	}{{FlagName, &p.Name}, {FlagTeam, &p.Team}, {FlagSkin, &p.Skin}, {FlagScore, &p.Score}, {FlagPing, &p.Ping}, {FlagTime, &p.Time}}
}

// Response is a decoded answer. Decode fills it in place, reusing its
// slices; its byte slices alias the datagram. Numbers are kept as the
// decimal text the server sent.
type Response struct {
	Game, Port, Name, GameType, Map, Version, Password, NumPlayers, MaxPlayers []byte
	Rules                                                                      []Rule
	Players                                                                    []Player
	// Terminated says the rules ended with an empty key; an answer may
	// end after its rules without it.
	Terminated bool
}

// header returns pointers to r's fixed fields in wire order.
func (r *Response) header() [9]*[]byte {
	return [9]*[]byte{&r.Game, &r.Port, &r.Name, &r.GameType, &r.Map, &r.Version, &r.Password, &r.NumPlayers, &r.MaxPlayers}
}

// readString reads an ASE string.
func readString(rd *wire.Reader, field string) []byte {
	n := int(rd.U8(field))
	if n <= 1 {
		return rd.Bytes(field, 0)
	}
	return rd.Bytes(field, n-1)
}

// Decode parses an answer datagram into r.
func (r *Response) Decode(b []byte) error {
	r.Rules, r.Players, r.Terminated = r.Rules[:0], r.Players[:0], false
	if len(b) > MaxDatagram {
		return wire.NewDecodeError("datagram", 0, wire.ErrTooLong)
	}
	if !LooksLikeResponse(b) {
		return wire.NewDecodeError("header", 0, ErrNotResponse)
	}
	rd := wire.NewReader(b[headerLen:])
	for _, f := range r.header() {
		*f = readString(&rd, "server info")
	}
	for rd.Err() == nil && rd.Len() > 0 {
		key := readString(&rd, "rule key")
		if len(key) == 0 {
			r.Terminated = rd.Err() == nil
			break
		}
		if len(r.Rules) == MaxRules {
			rd.Fail("rules", wire.ErrTooLong)
			break
		}
		r.Rules = append(r.Rules, Rule{Key: key, Value: readString(&rd, "rule value")})
	}
	for rd.Err() == nil && rd.Len() > 0 {
		if len(r.Players) == MaxPlayers {
			rd.Fail("players", wire.ErrTooLong)
			break
		}
		var p Player
		p.Flags = rd.U8("player flags")
		for _, f := range p.fields() {
			if p.Flags&f.flag != 0 {
				*f.v = readString(&rd, "player field")
			}
		}
		r.Players = append(r.Players, p)
	}
	if err := rd.Err(); err != nil {
		var de *wire.DecodeError
		if errors.As(err, &de) {
			de.Offset += headerLen
		}
		return err
	}
	return nil
}

// appendString appends s as an ASE string.
func appendString(b, s []byte) ([]byte, error) {
	if len(s) > 254 {
		return b, errors.New("ase: a string is longer than 254 bytes")
	}
	b = append(b, byte(len(s)+1))
	return append(b, s...), nil
}

// AppendTo appends r as a server sends it: an empty key after the rules
// when r.Terminated or r has players. Strings are at most 254 bytes and a
// rule key is not empty.
func (r *Response) AppendTo(b []byte) ([]byte, error) {
	b = append(b, "EYE1"...)
	var err error
	for _, f := range r.header() {
		if b, err = appendString(b, *f); err != nil {
			return b, err
		}
	}
	for _, rule := range r.Rules {
		if len(rule.Key) == 0 {
			return b, errors.New("ase: a rule key is empty")
		}
		if b, err = appendString(b, rule.Key); err != nil {
			return b, err
		}
		if b, err = appendString(b, rule.Value); err != nil {
			return b, err
		}
	}
	if r.Terminated || len(r.Players) > 0 {
		b = append(b, 1)
	}
	for i := range r.Players {
		p := &r.Players[i]
		b = append(b, p.Flags)
		for _, f := range p.fields() {
			if p.Flags&f.flag != 0 {
				if b, err = appendString(b, *f.v); err != nil {
					return b, err
				}
			}
		}
	}
	return b, nil
}
