package a2s

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"

	"github.com/gamegate/gamegate/wire"
)

// Type is a message's type byte.
type Type byte

// Message types.
const (
	TypeInfoRequest   Type = 'T' // A2S_INFO
	TypePlayerRequest Type = 'U' // A2S_PLAYER
	TypeRulesRequest  Type = 'V' // A2S_RULES
	// TypeChallengeRequest is the legacy A2S_SERVERQUERY_GETCHALLENGE,
	// answered with S2C_CHALLENGE by many servers still (GameDig's ffow
	// type asks it).
	TypeChallengeRequest Type = 'W'
	TypeChallenge        Type = 'A' // S2C_CHALLENGE
	TypeInfo             Type = 'I' // A2S_INFO answer, Source
	TypeInfoGoldSrc      Type = 'm' // A2S_INFO answer, obsolete GoldSrc
	TypePlayers          Type = 'D' // A2S_PLAYER answer
	TypeRules            Type = 'E' // A2S_RULES answer
)

// Header values: the int32 a datagram starts with.
const (
	HeaderSingle uint32 = 0xFFFFFFFF // -1: one datagram holds the message
	HeaderSplit  uint32 = 0xFFFFFFFE // -2: a fragment of a split message
)

// Sizes and bounds.
const (
	// HeaderLen is the length of a message's header: int32 -1 and the
	// type byte.
	HeaderLen = 5
	// ChallengeLen is the length of an S2C_CHALLENGE message.
	ChallengeLen = HeaderLen + 4
	// InfoRequestLen is the length of an A2S_INFO request without a
	// challenge; with one it is 4 bytes longer.
	InfoRequestLen = HeaderLen + len(infoPayload) + 1
	// MaxPlayers is the most players an A2S_PLAYER answer can count.
	MaxPlayers = 255
	// MaxRules is the most rules an A2S_RULES answer can count (int16).
	MaxRules = math.MaxInt16
	// NoChallenge is the challenge a client sends to ask for one.
	NoChallenge int32 = -1
)

const infoPayload = "Source Engine Query"

// Errors.
var (
	// ErrType reports a message whose type byte is not the one expected.
	ErrType = errors.New("unexpected message type")
	// ErrSplit reports a datagram that is a fragment of a split message,
	// given to a decoder that wants a whole one.
	ErrSplit = errors.New("split message fragment")
)

// Peek returns the header and type of a datagram or message without
// decoding the rest: for a fragment of a split message, header is
// HeaderSplit and typ is 0.
func Peek(b []byte) (header uint32, typ Type, err error) {
	if len(b) < 4 {
		return 0, 0, wire.NewDecodeError("header", 0, wire.ErrTruncated)
	}
	header = binary.LittleEndian.Uint32(b)
	switch header {
	case HeaderSplit:
		return header, 0, nil
	case HeaderSingle:
		if len(b) < HeaderLen {
			return 0, 0, wire.NewDecodeError("type", 4, wire.ErrTruncated)
		}
		return header, Type(b[4]), nil
	}
	return 0, 0, wire.NewDecodeError("header", 0, wire.ErrMagic)
}

// MaxRequest is the longest request LooksLikeRequest accepts, in bytes:
// the longest request (A2S_INFO with a challenge) is 29 bytes; the rest is
// slack for clients that pad.
const MaxRequest = 63

// LooksLikeRequest reports whether b has the shape of a request at fixed
// offsets: 5 to MaxRequest bytes, the single-datagram header, and the type
// of A2S_INFO, A2S_PLAYER, A2S_RULES or the legacy challenge request. It is
// the cheap test that tells a request from another protocol's datagram on
// a shared port; Request.Decode checks the rest.
func LooksLikeRequest(b []byte) bool {
	if len(b) < HeaderLen || len(b) > MaxRequest || binary.LittleEndian.Uint32(b) != HeaderSingle {
		return false
	}
	switch Type(b[4]) {
	case TypeInfoRequest, TypePlayerRequest, TypeRulesRequest, TypeChallengeRequest:
		return true
	}
	return false
}

// begin checks a message's header and type and returns a Reader after them.
func begin(b []byte, want ...Type) (wire.Reader, Type, error) {
	h, t, err := Peek(b)
	if err != nil {
		return wire.Reader{}, 0, err
	}
	if h == HeaderSplit {
		return wire.Reader{}, 0, wire.NewDecodeError("header", 0, ErrSplit)
	}
	for _, w := range want {
		if t == w {
			r := wire.NewReader(b)
			r.Skip("header", HeaderLen)
			return r, t, nil
		}
	}
	return wire.Reader{}, 0, wire.NewDecodeError("type", 4, ErrType)
}

func appendHeader(b []byte, t Type) []byte {
	return append(b, 0xFF, 0xFF, 0xFF, 0xFF, byte(t))
}

// appendString appends s and its NUL, refusing a NUL inside s.
func appendString(b []byte, s []byte, field string, err *error) []byte {
	if *err == nil && bytes.IndexByte(s, 0) >= 0 {
		*err = wire.NewDecodeError(field, len(b), wire.ErrRange)
	}
	b = append(b, s...)
	return append(b, 0)
}

// Request is a client's query: A2S_INFO, A2S_PLAYER, A2S_RULES, or the
// legacy challenge request.
type Request struct {
	Type Type // TypeInfoRequest, TypePlayerRequest, TypeRulesRequest or TypeChallengeRequest
	// Challenge is the number the server gave in S2C_CHALLENGE, or
	// NoChallenge to ask for one. An A2S_INFO request carries it only when
	// HasChallenge; A2S_PLAYER and A2S_RULES always do. The legacy
	// challenge request is the type byte alone, or with HasChallenge four
	// more bytes (NoChallenge, say), which make it as long as its answer.
	Challenge    int32
	HasChallenge bool
}

// Len is the length of the encoded request.
func (q *Request) Len() int {
	switch {
	case q.Type == TypeInfoRequest && q.HasChallenge:
		return InfoRequestLen + 4
	case q.Type == TypeInfoRequest:
		return InfoRequestLen
	case q.Type == TypeChallengeRequest && !q.HasChallenge:
		return HeaderLen
	}
	return HeaderLen + 4
}

// AppendTo appends the request. It fails with [wire.ErrRange] on field
// "type" for a Type that is not a request.
func (q *Request) AppendTo(b []byte) ([]byte, error) {
	switch q.Type {
	case TypeInfoRequest:
		b = appendHeader(b, q.Type)
		b = append(b, infoPayload...)
		b = append(b, 0)
		if q.HasChallenge {
			b = binary.LittleEndian.AppendUint32(b, uint32(q.Challenge))
		}
	case TypePlayerRequest, TypeRulesRequest:
		b = appendHeader(b, q.Type)
		b = binary.LittleEndian.AppendUint32(b, uint32(q.Challenge))
	case TypeChallengeRequest:
		b = appendHeader(b, q.Type)
		if q.HasChallenge {
			b = binary.LittleEndian.AppendUint32(b, uint32(q.Challenge))
		}
	default:
		return b, wire.NewDecodeError("type", 4, wire.ErrRange)
	}
	return b, nil
}

// Decode parses a request. An A2S_INFO request's bytes after its string,
// and a legacy challenge request's after its type, are a challenge when
// there are exactly four of them; any other number is refused
// ([wire.ErrTooLong], or [wire.ErrTruncated] for fewer), so a padded
// request is not mistaken for one with a challenge.
func (q *Request) Decode(b []byte) error {
	r, t, err := begin(b, TypeInfoRequest, TypePlayerRequest, TypeRulesRequest, TypeChallengeRequest)
	if err != nil {
		return err
	}
	*q = Request{Type: t}
	if t == TypeInfoRequest || t == TypeChallengeRequest {
		off := r.Offset()
		if t == TypeInfoRequest {
			if s := r.CString("payload"); r.Err() == nil && string(s) != infoPayload {
				return wire.NewDecodeError("payload", off, wire.ErrMagic)
			}
		}
		if r.Len() == 0 {
			return r.Err()
		}
	}
	q.Challenge = int32(r.U32LE("challenge"))
	q.HasChallenge = true
	if r.Err() == nil && r.Len() > 0 {
		return wire.NewDecodeError("trailer", r.Offset(), wire.ErrTooLong)
	}
	return r.Err()
}

// AppendChallenge appends an S2C_CHALLENGE message.
func AppendChallenge(b []byte, challenge int32) []byte {
	b = appendHeader(b, TypeChallenge)
	return binary.LittleEndian.AppendUint32(b, uint32(challenge))
}

// DecodeChallenge parses an S2C_CHALLENGE message.
func DecodeChallenge(b []byte) (int32, error) {
	r, _, err := begin(b, TypeChallenge)
	if err != nil {
		return 0, err
	}
	c := int32(r.U32LE("challenge"))
	return c, r.Err()
}

// Extra data flags of a Source A2S_INFO answer: which optional fields
// follow the version.
const (
	EDFPort     byte = 0x80 // int16 game port
	EDFSteamID  byte = 0x10 // uint64 server SteamID
	EDFSourceTV byte = 0x40 // int16 SourceTV port, string SourceTV name
	EDFKeywords byte = 0x20 // string keywords (tags)
	EDFGameID   byte = 0x01 // uint64 GameID (its low 24 bits are the AppID)
)

// AppIDTheShip is the game whose A2S_INFO answer has three more bytes
// after VAC, and whose A2S_PLAYER answer has more per player.
const AppIDTheShip = 2400

// Info is an A2S_INFO answer, Source ('I') or obsolete GoldSrc ('m'). Its
// byte slices alias the decoded input.
type Info struct {
	// GoldSrc marks the obsolete 'm' layout: Address and the Mod fields
	// are set, AppID, SteamID, Version and the extra data are not.
	GoldSrc bool
	// Address is the server's "ip:port" (GoldSrc only).
	Address []byte

	Protocol    byte
	Name        []byte
	Map         []byte
	Folder      []byte
	Game        []byte
	AppID       uint16
	Players     byte
	MaxPlayers  byte
	Bots        byte
	ServerType  byte // 'd' dedicated, 'l' listen, 'p' SourceTV relay (GoldSrc: upper case)
	Environment byte // 'l' Linux, 'w' Windows, 'm' or 'o' macOS (GoldSrc: upper case)
	Visibility  byte // 0 public, 1 private (password)
	VAC         byte // 0 unsecured, 1 secured

	// The Ship only (AppID 2400).
	ShipMode, ShipWitnesses, ShipDuration byte

	Version []byte
	// EDF says which of the fields below are present.
	EDF      byte
	Port     uint16
	SteamID  uint64
	TVPort   uint16
	TVName   []byte
	Keywords []byte
	GameID   uint64

	// GoldSrc mod fields, when Mod is 1.
	Mod          byte
	ModLink      []byte
	ModDownload  []byte
	ModVersion   uint32
	ModSize      uint32
	ModType      byte // 0 single and multiplayer, 1 multiplayer only
	ModDLL       byte // 0 Half-Life's DLL, 1 its own
	modReserved1 byte
}

// Decode parses an A2S_INFO answer of either layout.
func (m *Info) Decode(b []byte) error {
	r, t, err := begin(b, TypeInfo, TypeInfoGoldSrc)
	if err != nil {
		return err
	}
	*m = Info{GoldSrc: t == TypeInfoGoldSrc}
	if m.GoldSrc {
		return m.decodeGoldSrc(&r)
	}
	m.Protocol = r.U8("protocol")
	m.Name = r.CString("name")
	m.Map = r.CString("map")
	m.Folder = r.CString("folder")
	m.Game = r.CString("game")
	m.AppID = r.U16LE("appid")
	m.Players = r.U8("players")
	m.MaxPlayers = r.U8("max_players")
	m.Bots = r.U8("bots")
	m.ServerType = r.U8("server_type")
	m.Environment = r.U8("environment")
	m.Visibility = r.U8("visibility")
	m.VAC = r.U8("vac")
	if m.AppID == AppIDTheShip {
		m.ShipMode = r.U8("mode")
		m.ShipWitnesses = r.U8("witnesses")
		m.ShipDuration = r.U8("duration")
	}
	m.Version = r.CString("version")
	if r.Err() != nil || r.Len() == 0 {
		return r.Err()
	}
	m.EDF = r.U8("edf")
	if m.EDF&EDFPort != 0 {
		m.Port = r.U16LE("port")
	}
	if m.EDF&EDFSteamID != 0 {
		m.SteamID = r.U64LE("steamid")
	}
	if m.EDF&EDFSourceTV != 0 {
		m.TVPort = r.U16LE("sourcetv_port")
		m.TVName = r.CString("sourcetv_name")
	}
	if m.EDF&EDFKeywords != 0 {
		m.Keywords = r.CString("keywords")
	}
	if m.EDF&EDFGameID != 0 {
		m.GameID = r.U64LE("gameid")
	}
	return r.Err()
}

func (m *Info) decodeGoldSrc(r *wire.Reader) error {
	m.Address = r.CString("address")
	m.Name = r.CString("name")
	m.Map = r.CString("map")
	m.Folder = r.CString("folder")
	m.Game = r.CString("game")
	m.Players = r.U8("players")
	m.MaxPlayers = r.U8("max_players")
	m.Protocol = r.U8("protocol")
	m.ServerType = r.U8("server_type")
	m.Environment = r.U8("environment")
	m.Visibility = r.U8("visibility")
	m.Mod = r.U8Range("mod", 0, 1)
	if m.Mod == 1 {
		m.ModLink = r.CString("mod_link")
		m.ModDownload = r.CString("mod_download_link")
		m.modReserved1 = r.U8("mod_null")
		m.ModVersion = r.U32LE("mod_version")
		m.ModSize = r.U32LE("mod_size")
		m.ModType = r.U8("mod_type")
		m.ModDLL = r.U8("mod_dll")
	}
	m.VAC = r.U8("vac")
	m.Bots = r.U8("bots")
	return r.Err()
}

// AppendTo appends the answer in its layout (GoldSrc when m.GoldSrc).
func (m *Info) AppendTo(b []byte) ([]byte, error) {
	var err error
	if m.GoldSrc {
		b = appendHeader(b, TypeInfoGoldSrc)
		b = appendString(b, m.Address, "address", &err)
		b = appendString(b, m.Name, "name", &err)
		b = appendString(b, m.Map, "map", &err)
		b = appendString(b, m.Folder, "folder", &err)
		b = appendString(b, m.Game, "game", &err)
		b = append(b, m.Players, m.MaxPlayers, m.Protocol, m.ServerType, m.Environment, m.Visibility, m.Mod)
		if m.Mod > 1 {
			return b, wire.NewDecodeError("mod", len(b)-1, wire.ErrRange)
		}
		if m.Mod == 1 {
			b = appendString(b, m.ModLink, "mod_link", &err)
			b = appendString(b, m.ModDownload, "mod_download_link", &err)
			b = append(b, m.modReserved1)
			b = binary.LittleEndian.AppendUint32(b, m.ModVersion)
			b = binary.LittleEndian.AppendUint32(b, m.ModSize)
			b = append(b, m.ModType, m.ModDLL)
		}
		b = append(b, m.VAC, m.Bots)
		return b, err
	}
	b = appendHeader(b, TypeInfo)
	b = append(b, m.Protocol)
	b = appendString(b, m.Name, "name", &err)
	b = appendString(b, m.Map, "map", &err)
	b = appendString(b, m.Folder, "folder", &err)
	b = appendString(b, m.Game, "game", &err)
	b = binary.LittleEndian.AppendUint16(b, m.AppID)
	b = append(b, m.Players, m.MaxPlayers, m.Bots, m.ServerType, m.Environment, m.Visibility, m.VAC)
	if m.AppID == AppIDTheShip {
		b = append(b, m.ShipMode, m.ShipWitnesses, m.ShipDuration)
	}
	b = appendString(b, m.Version, "version", &err)
	if m.EDF == 0 {
		return b, err
	}
	b = append(b, m.EDF)
	if m.EDF&EDFPort != 0 {
		b = binary.LittleEndian.AppendUint16(b, m.Port)
	}
	if m.EDF&EDFSteamID != 0 {
		b = binary.LittleEndian.AppendUint64(b, m.SteamID)
	}
	if m.EDF&EDFSourceTV != 0 {
		b = binary.LittleEndian.AppendUint16(b, m.TVPort)
		b = appendString(b, m.TVName, "sourcetv_name", &err)
	}
	if m.EDF&EDFKeywords != 0 {
		b = appendString(b, m.Keywords, "keywords", &err)
	}
	if m.EDF&EDFGameID != 0 {
		b = binary.LittleEndian.AppendUint64(b, m.GameID)
	}
	return b, err
}

// Player is one player of an A2S_PLAYER answer. Name aliases the input.
type Player struct {
	Index    byte
	Name     []byte
	Score    int32
	Duration float32 // seconds connected
}

// Players is an A2S_PLAYER answer.
type Players struct {
	Players []Player
}

// Decode parses an A2S_PLAYER answer, reusing m.Players' array.
func (m *Players) Decode(b []byte) error {
	r, _, err := begin(b, TypePlayers)
	if err != nil {
		return err
	}
	m.Players = m.Players[:0]
	n := int(r.U8("count"))
	// Each player takes at least 10 bytes: refuse a count the datagram
	// cannot hold before growing anything.
	if r.Err() == nil && n*10 > r.Len() {
		return wire.NewDecodeError("players", r.Offset(), wire.ErrTruncated)
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		var p Player
		p.Index = r.U8("index")
		p.Name = r.CString("name")
		p.Score = int32(r.U32LE("score"))
		p.Duration = math.Float32frombits(r.U32LE("duration"))
		m.Players = append(m.Players, p)
	}
	if r.Err() != nil {
		m.Players = m.Players[:0]
	}
	return r.Err()
}

// AppendTo appends the answer; more than MaxPlayers players is
// [wire.ErrRange].
func (m *Players) AppendTo(b []byte) ([]byte, error) {
	if len(m.Players) > MaxPlayers {
		return b, wire.NewDecodeError("count", len(b)+HeaderLen, wire.ErrRange)
	}
	var err error
	b = appendHeader(b, TypePlayers)
	b = append(b, byte(len(m.Players)))
	for i := range m.Players {
		p := &m.Players[i]
		b = append(b, p.Index)
		b = appendString(b, p.Name, "name", &err)
		b = binary.LittleEndian.AppendUint32(b, uint32(p.Score))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.Duration))
	}
	return b, err
}

// Rule is one server variable of an A2S_RULES answer; both slices alias the
// input.
type Rule struct {
	Name, Value []byte
}

// Rules is an A2S_RULES answer.
type Rules struct {
	Rules []Rule
}

// Decode parses an A2S_RULES answer, reusing m.Rules' array.
func (m *Rules) Decode(b []byte) error {
	r, _, err := begin(b, TypeRules)
	if err != nil {
		return err
	}
	m.Rules = m.Rules[:0]
	off := r.Offset()
	n := int(int16(r.U16LE("count")))
	if r.Err() == nil && (n < 0 || n*2 > r.Len()) {
		// Negative, or more pairs than the bytes left could hold (each
		// takes two NULs at least).
		if n < 0 {
			return wire.NewDecodeError("count", off, wire.ErrRange)
		}
		return wire.NewDecodeError("rules", r.Offset(), wire.ErrTruncated)
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		name := r.CString("name")
		value := r.CString("value")
		m.Rules = append(m.Rules, Rule{Name: name, Value: value})
	}
	if r.Err() != nil {
		m.Rules = m.Rules[:0]
	}
	return r.Err()
}

// AppendTo appends the answer; more than MaxRules rules is
// [wire.ErrRange].
func (m *Rules) AppendTo(b []byte) ([]byte, error) {
	if len(m.Rules) > MaxRules {
		return b, wire.NewDecodeError("count", len(b)+HeaderLen, wire.ErrRange)
	}
	var err error
	b = appendHeader(b, TypeRules)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Rules)))
	for i := range m.Rules {
		b = appendString(b, m.Rules[i].Name, "name", &err)
		b = appendString(b, m.Rules[i].Value, "value", &err)
	}
	return b, err
}
