// Package teeworlds is the codec of Teeworlds 0.7's server info query,
// free of I/O, as the game's engine (src/engine/shared/network*.cpp,
// src/engine/server/server.cpp) writes and reads it.
//
// A 0.7 server answers connectionless packets only from an address that
// holds a token it issued, so a query is two exchanges:
//
//  1. The client sends a control packet NET_CTRLMSG_TOKEN carrying its own
//     token, padded to TokenRequestDataSize bytes so that the answer is
//     never bigger than the request; the server answers with a control
//     packet addressed to that token, carrying the server's token for the
//     client's address ([TokenRequest], [TokenResponse]).
//  2. The client sends a connectionless packet with both tokens and
//     "\xff\xff\xff\xffgie3" plus a browse token; the server answers
//     "\xff\xff\xff\xffinf3", the browse token and its info ([InfoRequest],
//     [Info]).
//
// Header layouts: a control packet is flags<<2 (1 = control) | ack's high
// bits, ack, chunk count, a big-endian token; a connectionless packet is
// 8<<2 | version 1, the big-endian token it is addressed to and the
// sender's own (response) token. Numbers in the info are the engine's
// variable-length integers ([AppendInt]); strings end with a NUL.
package teeworlds

import (
	"bytes"
	"encoding/binary"

	"github.com/gamegate/gamegate/wire"
)

// Sizes, flags and bounds.
const (
	// HeaderLen is a control packet's header.
	HeaderLen = 7
	// ConnlessHeaderLen is a connectionless packet's header.
	ConnlessHeaderLen = 9
	// MaxPacketSize is the largest packet the engine sends or takes.
	MaxPacketSize = 1400
	// PacketVersion is the connectionless packets' version.
	PacketVersion = 1
	// FlagControl and FlagConnless are packet flags (sent shifted left by 2).
	FlagControl  = 1
	FlagConnless = 8
	// FlagCompression marks a compressed packet (never a control one).
	FlagCompression = 4
	// CtrlToken is NET_CTRLMSG_TOKEN.
	CtrlToken = 5
	// TokenRequestDataSize is the least data a token request carries: the
	// server answers smaller requests with nothing.
	TokenRequestDataSize = 512
	// TokenNone is NET_TOKEN_NONE, the token of a packet that has none.
	TokenNone = 0xFFFFFFFF
	// MaxIntLen is the longest variable-length integer.
	MaxIntLen = 5
	// MaxClients is the most clients a 0.7 server has (MAX_CLIENTS): an
	// info listing more is refused.
	MaxClients = 64
	// DefaultPort is the game's default port (UDP).
	DefaultPort = 8303
)

// The server-info flags.
const (
	InfoFlagPassword  = 1
	InfoFlagTimeScore = 2
)

// The client flags of an info's client list.
const (
	ClientFlagSpectator = 1
	ClientFlagBot       = 2
)

var (
	magicGetInfo = []byte("\xff\xff\xff\xffgie3")
	magicInfo    = []byte("\xff\xff\xff\xffinf3")
)

// TokenRequest asks a server for its token for the sender's address.
type TokenRequest struct {
	// Token is the client's own: the server addresses its answer to it.
	Token uint32
}

// Len is the request's length: a control header, the control message,
// the token and padding up to TokenRequestDataSize bytes after it.
func (m *TokenRequest) Len() int { return HeaderLen + 1 + TokenRequestDataSize }

// AppendTo appends the request to b.
func (m *TokenRequest) AppendTo(b []byte) ([]byte, error) {
	b = append(b, FlagControl<<2, 0, 0)
	b = binary.BigEndian.AppendUint32(b, TokenNone)
	b = append(b, CtrlToken)
	b = binary.BigEndian.AppendUint32(b, m.Token)
	return append(b, make([]byte, TokenRequestDataSize-4)...), nil
}

// TokenResponse is a server's answer to a TokenRequest.
type TokenResponse struct {
	// To is the token the answer is addressed to: the request's.
	To uint32
	// Token is the server's token for the client's address.
	Token uint32
}

// TokenResponseLen is a token response's length.
const TokenResponseLen = HeaderLen + 1 + 4

// Len returns TokenResponseLen.
func (m *TokenResponse) Len() int { return TokenResponseLen }

// AppendTo appends the response to b.
func (m *TokenResponse) AppendTo(b []byte) ([]byte, error) {
	b = append(b, FlagControl<<2, 0, 0)
	b = binary.BigEndian.AppendUint32(b, m.To)
	b = append(b, CtrlToken)
	return binary.BigEndian.AppendUint32(b, m.Token), nil
}

// Decode parses a token response: a control packet (no acknowledgement,
// no chunks) whose message is NET_CTRLMSG_TOKEN, exactly
// TokenResponseLen bytes.
func (m *TokenResponse) Decode(b []byte) error {
	*m = TokenResponse{}
	switch {
	case len(b) < TokenResponseLen:
		return wire.NewDecodeError("token response", len(b), wire.ErrTruncated)
	case len(b) > TokenResponseLen:
		return wire.NewDecodeError("token response", TokenResponseLen, wire.ErrTooLong)
	case b[0] != FlagControl<<2 || b[1] != 0 || b[2] != 0:
		return wire.NewDecodeError("control header", 0, wire.ErrMagic)
	case b[HeaderLen] != CtrlToken:
		return wire.NewDecodeError("control message", HeaderLen, wire.ErrMagic)
	}
	m.To = binary.BigEndian.Uint32(b[3:])
	m.Token = binary.BigEndian.Uint32(b[HeaderLen+1:])
	return nil
}

// PeekTokenResponse returns the token a token response is addressed to,
// when b is one; a client drops what is not addressed to its token
// before decoding.
func PeekTokenResponse(b []byte) (to uint32, ok bool) {
	if len(b) != TokenResponseLen || b[0] != FlagControl<<2 || b[HeaderLen] != CtrlToken {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[3:]), true
}

// InfoRequest asks for the server's info.
type InfoRequest struct {
	// To is the server's token (from its TokenResponse).
	To uint32
	// Token is the client's own.
	Token uint32
	// BrowseToken is echoed in the Info.
	BrowseToken int32
}

// Len returns the request's length.
func (m *InfoRequest) Len() int {
	return ConnlessHeaderLen + len(magicGetInfo) + IntLen(m.BrowseToken)
}

// AppendTo appends the request to b.
func (m *InfoRequest) AppendTo(b []byte) ([]byte, error) {
	b = appendConnless(b, m.To, m.Token)
	b = append(b, magicGetInfo...)
	return AppendInt(b, m.BrowseToken), nil
}

func appendConnless(b []byte, to, from uint32) []byte {
	b = append(b, FlagConnless<<2|PacketVersion)
	b = binary.BigEndian.AppendUint32(b, to)
	return binary.BigEndian.AppendUint32(b, from)
}

// PeekInfo returns the token an info packet is addressed to and the
// browse token it echoes, when b starts as one does; a client matches
// answers to its request by them before decoding.
func PeekInfo(b []byte) (to uint32, browseToken int32, ok bool) {
	if len(b) < ConnlessHeaderLen+len(magicInfo)+1 || b[0] != FlagConnless<<2|PacketVersion ||
		!bytes.Equal(b[ConnlessHeaderLen:ConnlessHeaderLen+len(magicInfo)], magicInfo) {
		return 0, 0, false
	}
	r := wire.NewReader(b[ConnlessHeaderLen+len(magicInfo):])
	v := readInt(&r, "browse token")
	return binary.BigEndian.Uint32(b[1:]), v, r.Err() == nil
}

// Client is one client in an Info.
type Client struct {
	Name, Clan []byte
	Country    int32
	Score      int32
	// Flags: ClientFlagSpectator, ClientFlagBot; 0 for a player.
	Flags int32
}

// Info is a server's info (SERVERBROWSE_INFO, "inf3"). Decode aliases its
// input in the byte slices.
type Info struct {
	// To is the token the packet is addressed to (the client's); From the
	// server's.
	To, From    uint32
	BrowseToken int32
	Version     []byte
	Name        []byte
	Hostname    []byte
	Map         []byte
	GameType    []byte
	// Flags: InfoFlagPassword, InfoFlagTimeScore.
	Flags      int32
	SkillLevel int32
	// NumPlayers counts the clients in the game, NumClients spectators
	// too; MaxPlayers is the server's player slots, MaxClients its client
	// limit.
	NumPlayers, MaxPlayers, NumClients, MaxClients int32
	Clients                                        []Client
}

// Decode parses an info packet: a connectionless packet of
// PacketVersion, the info magic, and every field; the clients run to the
// end of the packet, at most MaxClients of them.
func (m *Info) Decode(b []byte) error {
	clients := m.Clients[:0]
	*m = Info{Clients: clients}
	if len(b) > MaxPacketSize {
		return wire.NewDecodeError("packet", MaxPacketSize, wire.ErrTooLong)
	}
	r := wire.NewReader(b)
	if h := r.U8("header"); r.Err() == nil && h != FlagConnless<<2|PacketVersion {
		return wire.NewDecodeError("header", 0, wire.ErrMagic)
	}
	m.To = r.U32BE("token")
	m.From = r.U32BE("response token")
	if magic := r.Bytes("magic", len(magicInfo)); r.Err() == nil && !bytes.Equal(magic, magicInfo) {
		return wire.NewDecodeError("magic", ConnlessHeaderLen, wire.ErrMagic)
	}
	m.BrowseToken = readInt(&r, "browse token")
	m.Version = r.CString("version")
	m.Name = r.CString("name")
	m.Hostname = r.CString("hostname")
	m.Map = r.CString("map")
	m.GameType = r.CString("game type")
	m.Flags = readInt(&r, "flags")
	m.SkillLevel = readInt(&r, "skill level")
	m.NumPlayers = readInt(&r, "players")
	m.MaxPlayers = readInt(&r, "max players")
	m.NumClients = readInt(&r, "clients")
	m.MaxClients = readInt(&r, "max clients")
	for r.Err() == nil && r.Len() > 0 {
		if len(m.Clients) == MaxClients {
			return wire.NewDecodeError("clients", r.Offset(), wire.ErrTooLong)
		}
		var c Client
		c.Name = r.CString("client name")
		c.Clan = r.CString("client clan")
		c.Country = readInt(&r, "client country")
		c.Score = readInt(&r, "client score")
		c.Flags = readInt(&r, "client flags")
		m.Clients = append(m.Clients, c)
	}
	return r.Err()
}

// AppendTo appends the info as a packet. Strings must hold no NUL, and the
// clients be at most MaxClients and the packet MaxPacketSize bytes.
func (m *Info) AppendTo(b []byte) ([]byte, error) {
	start := len(b)
	if len(m.Clients) > MaxClients {
		return b, wire.ErrRange
	}
	b = appendConnless(b, m.To, m.From)
	b = append(b, magicInfo...)
	b = AppendInt(b, m.BrowseToken)
	ok := true
	str := func(s []byte) {
		ok = ok && bytes.IndexByte(s, 0) < 0
		b = append(append(b, s...), 0)
	}
	for _, s := range [][]byte{m.Version, m.Name, m.Hostname, m.Map, m.GameType} {
		str(s)
	}
	for _, v := range []int32{m.Flags, m.SkillLevel, m.NumPlayers, m.MaxPlayers, m.NumClients, m.MaxClients} {
		b = AppendInt(b, v)
	}
	for i := range m.Clients {
		c := &m.Clients[i]
		str(c.Name)
		str(c.Clan)
		b = AppendInt(AppendInt(AppendInt(b, c.Country), c.Score), c.Flags)
	}
	switch {
	case !ok:
		return b[:start], wire.ErrRange
	case len(b)-start > MaxPacketSize:
		return b[:start], wire.ErrTooLong
	}
	return b, nil
}

// Len returns the length of the packet AppendTo writes.
func (m *Info) Len() int {
	b, _ := m.AppendTo(nil)
	return len(b)
}

// AppendInt appends v as the engine's variable-length integer: a first
// byte of extension bit, sign bit and 6 bits, then bytes of extension bit
// and 7 bits, low bits first; a negative v is sent as its complement with
// the sign bit set.
func AppendInt(b []byte, v int32) []byte {
	u := uint32(v)
	var sign byte
	if v < 0 {
		sign, u = 0x40, ^u
	}
	c := sign | byte(u&0x3F)
	u >>= 6
	for u != 0 {
		b = append(b, c|0x80)
		c = byte(u & 0x7F)
		u >>= 7
	}
	return append(b, c)
}

// IntLen returns the length of v as AppendInt writes it.
func IntLen(v int32) int {
	var tmp [MaxIntLen]byte
	return len(AppendInt(tmp[:0], v))
}

// readInt reads a variable-length integer; one longer than MaxIntLen
// bytes is refused.
func readInt(r *wire.Reader, field string) int32 {
	c := r.U8(field)
	sign := c >> 6 & 1
	u := uint32(c & 0x3F)
	shift := 6
	for n := 1; c&0x80 != 0 && r.Err() == nil; n++ {
		if n == MaxIntLen {
			r.Fail(field, wire.ErrRange)
			return 0
		}
		c = r.U8(field)
		u |= uint32(c&0x7F) << shift
		shift += 7
	}
	if sign != 0 {
		u = ^u
	}
	return int32(u)
}
