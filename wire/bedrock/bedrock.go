// Package bedrock is the codec of Minecraft Bedrock edition's server status
// query, RakNet's unconnected ping and pong, free of I/O.
//
// The ping and its answer, all integers big-endian:
//
//	ping: 01 (or 02), int64 time, magic, int64 client GUID
//	pong: 1C, int64 time (the ping's, echoed), int64 server GUID, magic,
//	      uint16 length, advertisement
//
// where magic is RakNet's offline message ID, the 16 bytes
// 00FFFF00FEFEFEFEFDFDFDFD12345678, and a Minecraft server's advertisement
// is text of fields each ended by a semicolon:
//
//	MCPE;motd;protocol;version;online;max;serverID;subMOTD;gamemode;gamemodeNumeric;port4;port6;
//
// MCEE instead of MCPE is Minecraft Education. Servers send at least the first
// six fields; the others are optional, and some servers add more. PocketMine
// writes a semicolon inside a field as a backslash and a semicolon.
package bedrock

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Packet IDs.
const (
	// IDUnconnectedPing asks any server for its advertisement.
	IDUnconnectedPing = 0x01
	// IDUnconnectedPingOpenConnections asks only servers with open slots.
	IDUnconnectedPingOpenConnections = 0x02
	// IDUnconnectedPong is the answer to either ping.
	IDUnconnectedPong = 0x1C
)

// Sizes and limits.
const (
	// PingLen is the length of an unconnected ping.
	PingLen = 1 + 8 + len(Magic) + 8
	// PongHeaderLen is the length of a pong before its advertisement.
	PongHeaderLen = 1 + 8 + 8 + len(Magic) + 2
	// MaxAdvertisement is the longest advertisement the length prefix
	// can announce.
	MaxAdvertisement = 0xFFFF
	// MaxFields bounds the fields of an advertisement.
	MaxFields = 32
	// MinFields is how many fields every server sends: edition, motd,
	// protocol, version, online and max.
	MinFields = 6
	// DefaultPort is the port Bedrock servers listen on.
	DefaultPort = 19132
)

// Magic is RakNet's offline message ID, carried by every unconnected
// message.
var Magic = [16]byte{0x00, 0xFF, 0xFF, 0x00, 0xFE, 0xFE, 0xFE, 0xFE, 0xFD, 0xFD, 0xFD, 0xFD, 0x12, 0x34, 0x56, 0x78}

// ErrNotPong reports a datagram that is not an unconnected pong, and
// ErrNotPing one that is not an unconnected ping.
var (
	ErrNotPong = errors.New("not a RakNet unconnected pong")
	ErrNotPing = errors.New("not a RakNet unconnected ping")
)

// Ping is an unconnected ping.
type Ping struct {
	// Time is echoed by the pong; a client may send any value (a random one
	// makes a forged pong unlikely to match).
	Time int64
	// ClientGUID identifies the client to RakNet.
	ClientGUID int64
	// OpenConnections selects the 0x02 form, which only servers with open
	// slots answer.
	OpenConnections bool
}

// AppendTo appends the ping.
func (p *Ping) AppendTo(b []byte) []byte {
	id := byte(IDUnconnectedPing)
	if p.OpenConnections {
		id = IDUnconnectedPingOpenConnections
	}
	b = append(b, id)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Time))
	b = append(b, Magic[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(p.ClientGUID))
}

// Decode parses an unconnected ping. RakNet clients pad some pings; bytes
// after the client GUID are ignored.
func (p *Ping) Decode(b []byte) error {
	*p = Ping{}
	if len(b) == 0 || (b[0] != IDUnconnectedPing && b[0] != IDUnconnectedPingOpenConnections) {
		return wire.NewDecodeError("packet id", 0, ErrNotPing)
	}
	if len(b) < PingLen {
		return wire.NewDecodeError("ping", len(b), wire.ErrTruncated)
	}
	if !bytes.Equal(b[9:9+len(Magic)], Magic[:]) {
		return wire.NewDecodeError("magic", 9, wire.ErrMagic)
	}
	p.OpenConnections = b[0] == IDUnconnectedPingOpenConnections
	p.Time = int64(binary.BigEndian.Uint64(b[1:]))
	p.ClientGUID = int64(binary.BigEndian.Uint64(b[9+len(Magic):]))
	return nil
}

// Field indexes of an advertisement.
const (
	FieldEdition = iota
	FieldMOTD
	FieldProtocol
	FieldVersion
	FieldOnline
	FieldMax
	FieldServerID
	FieldSubMOTD // the level name on vanilla servers
	FieldGameMode
	FieldGameModeNumeric
	FieldPortV4
	FieldPortV6
)

// Pong is an unconnected pong. Decode fills it in place and its byte slices
// alias the datagram.
type Pong struct {
	Time       int64
	ServerGUID int64
	// Advertisement is the text after the header, as sent.
	Advertisement []byte
	// Fields are the advertisement's fields, escapes kept (see
	// [AppendUnescaped]); NumFields of them are set.
	Fields    [MaxFields][]byte
	NumFields int
}

// Field returns field i of the advertisement and whether the server sent
// it.
func (p *Pong) Field(i int) ([]byte, bool) {
	if i < 0 || i >= p.NumFields {
		return nil, false
	}
	return p.Fields[i], true
}

// PongTime returns the time a pong echoes, when b starts as a pong does
// (its packet ID and magic), whatever follows; a client matches pongs to its
// ping by it before decoding them.
func PongTime(b []byte) (int64, bool) {
	if len(b) < PongHeaderLen || b[0] != IDUnconnectedPong || !bytes.Equal(b[17:17+len(Magic)], Magic[:]) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[1:])), true
}

// Decode parses an unconnected pong. It checks the magic, that the length
// prefix covers exactly the rest of the datagram, that the advertisement
// has at least MinFields fields and at most MaxFields, and that protocol,
// online and max are decimal numbers ([Number] reads them).
func (p *Pong) Decode(b []byte) error {
	p.Time, p.ServerGUID, p.Advertisement, p.NumFields = 0, 0, nil, 0
	if len(b) == 0 || b[0] != IDUnconnectedPong {
		return wire.NewDecodeError("packet id", 0, ErrNotPong)
	}
	if len(b) < PongHeaderLen {
		return wire.NewDecodeError("pong", len(b), wire.ErrTruncated)
	}
	if !bytes.Equal(b[17:17+len(Magic)], Magic[:]) {
		return wire.NewDecodeError("magic", 17, wire.ErrMagic)
	}
	n := int(binary.BigEndian.Uint16(b[PongHeaderLen-2:]))
	switch rest := len(b) - PongHeaderLen; {
	case n > rest:
		return wire.NewDecodeError("advertisement", PongHeaderLen, wire.ErrTruncated)
	case n < rest:
		return wire.NewDecodeError("advertisement", PongHeaderLen+n, wire.ErrTooLong)
	}
	p.Time = int64(binary.BigEndian.Uint64(b[1:]))
	p.ServerGUID = int64(binary.BigEndian.Uint64(b[9:]))
	ad := b[PongHeaderLen:]
	p.Advertisement = ad
	var starts [MaxFields]int
	start := 0
	for i := 0; i <= len(ad); i++ {
		end := i == len(ad)
		if !end && (ad[i] != ';' || i > 0 && ad[i-1] == '\\') {
			continue
		}
		if end && i == start {
			break // the text ended with a separator: no last field
		}
		if p.NumFields == MaxFields {
			return wire.NewDecodeError("advertisement", PongHeaderLen+start, wire.ErrTooLong)
		}
		p.Fields[p.NumFields] = ad[start:i:i]
		starts[p.NumFields] = start
		p.NumFields++
		start = i + 1
	}
	if p.NumFields < MinFields {
		return wire.NewDecodeError("advertisement", PongHeaderLen+len(ad), wire.ErrTruncated)
	}
	for _, f := range [...]int{FieldProtocol, FieldOnline, FieldMax} {
		if _, ok := Number(p.Fields[f]); !ok {
			return wire.NewDecodeError(fieldNames[f], PongHeaderLen+starts[f], wire.ErrRange)
		}
	}
	return nil
}

var fieldNames = [...]string{FieldProtocol: "protocol", FieldOnline: "online", FieldMax: "max"}

// MaxNumber is the largest value Number accepts.
const MaxNumber = 999_999_999

// Number reads a field that holds a non-negative decimal of at most nine
// digits, as the protocol, player counts, game mode and ports are; ok is
// false for anything else (an empty field included).
func Number(b []byte) (n int, ok bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// AppendUnescaped appends field with PocketMine's escaped semicolons
// ("\;") turned back into semicolons.
func AppendUnescaped(dst, field []byte) []byte {
	for {
		i := bytes.Index(field, []byte(`\;`))
		if i < 0 {
			return append(dst, field...)
		}
		dst = append(dst, field[:i]...)
		dst = append(dst, ';')
		field = field[i+2:]
	}
}

// AppendTo appends the pong as a server sends it, its advertisement built
// from Fields[:NumFields], each followed by a semicolon (but for a last
// field ending with a backslash, which would escape it). A field holding a
// semicolon not escaped by a backslash, or another field ending with a
// backslash, would not decode to the same fields and is refused, as is an
// advertisement longer than MaxAdvertisement.
func (p *Pong) AppendTo(b []byte) ([]byte, error) {
	if p.NumFields < 0 || p.NumFields > MaxFields {
		return b, errors.New("bedrock: NumFields out of range")
	}
	n := 0
	for k, f := range p.Fields[:p.NumFields] {
		for i, c := range f {
			if c == ';' && (i == 0 || f[i-1] != '\\') {
				return b, errors.New("bedrock: an advertisement field holds an unescaped semicolon")
			}
		}
		n += len(f) + 1
		if endsEscaped(f) {
			if k != p.NumFields-1 {
				return b, errors.New("bedrock: an advertisement field ends with a backslash")
			}
			n--
		}
	}
	if n > MaxAdvertisement {
		return b, errors.New("bedrock: the advertisement is longer than 65535 bytes")
	}
	b = append(b, IDUnconnectedPong)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Time))
	b = binary.BigEndian.AppendUint64(b, uint64(p.ServerGUID))
	b = append(b, Magic[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	for _, f := range p.Fields[:p.NumFields] {
		b = append(b, f...)
		if !endsEscaped(f) {
			b = append(b, ';')
		}
	}
	return b, nil
}

func endsEscaped(f []byte) bool { return len(f) > 0 && f[len(f)-1] == '\\' }
