// Package minecraft is the codec of Minecraft Java edition's Server List
// Ping, free of I/O: VarInt framing, the handshake, status and ping
// packets, and the legacy (1.4–1.6) FE 01 ping and its FF answer.
//
// A packet is a VarInt length (of the ID and data), a VarInt packet ID and
// the data. A VarInt holds 7 bits a byte, the low group first, 0x80 meaning
// another byte follows, at most 5 bytes. A string is a VarInt byte length
// and UTF-8.
package minecraft

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gamegate/gamegate/wire"
)

// Limits of the format.
const (
	// MaxVarIntLen is the longest VarInt: 5 bytes for 32 bits.
	MaxVarIntLen = 5
	// MaxStatusChars is the most UTF-16 code units the status JSON may
	// have (the protocol's limit for that string).
	MaxStatusChars = 32767
	// MaxFrame bounds a frame's length field: the status answer, its
	// largest packet, is an ID, a VarInt and up to 3 bytes per UTF-16
	// code unit.
	MaxFrame = 1 + MaxVarIntLen + 3*MaxStatusChars
	// MaxHost is the longest server address a handshake carries.
	MaxHost = 255
	// DefaultPort is the Java edition's TCP port.
	DefaultPort = 25565
)

// Packet IDs of the status state.
const (
	IDHandshake = 0x00 // serverbound, handshaking state
	IDStatus    = 0x00 // status request (serverbound) and response (clientbound)
	IDPing      = 0x01 // ping (serverbound) and pong (clientbound)
)

// NextStateStatus is the handshake's next state that asks for the status.
const NextStateStatus = 1

// ErrVarIntTooLong reports a VarInt of more than 5 bytes.
var ErrVarIntTooLong = errors.New("VarInt longer than 5 bytes")

// AppendVarInt appends v as a VarInt (negative values take 5 bytes).
func AppendVarInt(b []byte, v int32) []byte {
	u := uint32(v)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// VarIntLen is the encoded length of v.
func VarIntLen(v int32) int {
	n, u := 1, uint32(v)
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// ReadVarInt reads a VarInt from the start of b and returns it with the
// number of bytes read. Input that ends inside the VarInt is
// wire.ErrTruncated (more bytes may complete it); a sixth byte is
// ErrVarIntTooLong.
func ReadVarInt(b []byte) (int32, int, error) {
	var u uint32
	for i := 0; i < MaxVarIntLen; i++ {
		if i == len(b) {
			return 0, 0, wire.ErrTruncated
		}
		c := b[i]
		u |= uint32(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			return int32(u), i + 1, nil
		}
	}
	return 0, 0, ErrVarIntTooLong
}

// Frame is one packet cut from a stream; Data aliases the stream.
type Frame struct {
	ID   int32
	Data []byte
}

// SplitFrame cuts the first packet from a stream and returns it with the
// number of bytes it took. wire.ErrTruncated means the packet is not
// complete yet: read more and call again. Any other error is fatal for
// the stream. Packets longer than maxLen (at most MaxFrame) are refused.
func SplitFrame(b []byte, maxLen int) (Frame, int, error) {
	if maxLen <= 0 || maxLen > MaxFrame {
		maxLen = MaxFrame
	}
	length, n, err := ReadVarInt(b)
	if err != nil {
		if errors.Is(err, wire.ErrTruncated) {
			return Frame{}, 0, err
		}
		return Frame{}, 0, wire.NewDecodeError("packet length", 0, err)
	}
	if length < 1 || int(length) > maxLen {
		return Frame{}, 0, wire.NewDecodeError("packet length", 0, wire.ErrRange)
	}
	if len(b)-n < int(length) {
		return Frame{}, 0, wire.ErrTruncated
	}
	body := b[n : n+int(length) : n+int(length)]
	id, m, err := ReadVarInt(body)
	if err != nil {
		return Frame{}, 0, wire.NewDecodeError("packet id", n, err)
	}
	return Frame{ID: id, Data: body[m:]}, n + int(length), nil
}

// appendFrame appends a packet of id whose data the caller appends with
// body, fixing the length prefix afterwards.
func appendFrame(b []byte, id int32, dataLen int) []byte {
	b = AppendVarInt(b, int32(VarIntLen(id)+dataLen))
	return AppendVarInt(b, id)
}

// AppendHandshake appends the handshake packet: the client's protocol
// version, the address it connects to, the port, and the next state
// (NextStateStatus for a status).
func AppendHandshake(b []byte, protocol int32, host string, port uint16, next int32) ([]byte, error) {
	if len(host) > MaxHost {
		return b, wire.NewDecodeError("server address", 0, wire.ErrTooLong)
	}
	dataLen := VarIntLen(protocol) + VarIntLen(int32(len(host))) + len(host) + 2 + VarIntLen(next)
	b = appendFrame(b, IDHandshake, dataLen)
	b = AppendVarInt(b, protocol)
	b = AppendVarInt(b, int32(len(host)))
	b = append(b, host...)
	b = append(b, byte(port>>8), byte(port))
	return AppendVarInt(b, next), nil
}

// AppendStatusRequest appends the (empty) status request.
func AppendStatusRequest(b []byte) []byte { return appendFrame(b, IDStatus, 0) }

// AppendPing appends a ping carrying v, which the pong echoes.
func AppendPing(b []byte, v int64) []byte {
	b = appendFrame(b, IDPing, 8)
	return appendInt64(b, v)
}

func appendInt64(b []byte, v int64) []byte {
	u := uint64(v)
	return append(b, byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32), byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

// AppendStatusResponse appends a status answer carrying json (a server's
// side, for tests and fuzzing).
func AppendStatusResponse(b []byte, json []byte) ([]byte, error) {
	if n := utf16Len(json); n < 0 || n > MaxStatusChars {
		return b, wire.NewDecodeError("status JSON", 0, wire.ErrTooLong)
	}
	b = appendFrame(b, IDStatus, VarIntLen(int32(len(json)))+len(json))
	b = AppendVarInt(b, int32(len(json)))
	return append(b, json...), nil
}

// DecodeStatusResponse returns the JSON of a status answer's data,
// aliasing it. The JSON must be valid UTF-8 of at most MaxStatusChars
// UTF-16 code units and fill the packet.
func DecodeStatusResponse(data []byte) ([]byte, error) {
	n, m, err := ReadVarInt(data)
	if err != nil {
		return nil, wire.NewDecodeError("status JSON length", 0, err)
	}
	if n < 0 || int(n) > 3*MaxStatusChars {
		return nil, wire.NewDecodeError("status JSON length", 0, wire.ErrRange)
	}
	if len(data)-m != int(n) {
		return nil, wire.NewDecodeError("status JSON", m, wire.ErrTruncated)
	}
	json := data[m:]
	if c := utf16Len(json); c < 0 || c > MaxStatusChars {
		return nil, wire.NewDecodeError("status JSON", m, wire.ErrRange)
	}
	return json, nil
}

// utf16Len counts b's UTF-16 code units, or returns -1 when b is not
// valid UTF-8.
func utf16Len(b []byte) int {
	n := 0
	for len(b) > 0 {
		if b[0] < utf8.RuneSelf {
			n++
			b = b[1:]
			continue
		}
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			return -1
		}
		if r > 0xFFFF {
			n += 2
		} else {
			n++
		}
		b = b[size:]
	}
	return n
}

// DecodePong returns the value a pong echoes.
func DecodePong(data []byte) (int64, error) {
	r := wire.NewReader(data)
	v := int64(r.U64BE("pong payload"))
	if err := r.Err(); err != nil {
		return 0, err
	}
	if r.Len() != 0 {
		return 0, wire.NewDecodeError("pong payload", 8, wire.ErrTooLong)
	}
	return v, nil
}

// Legacy ping (Minecraft 1.4 to 1.6, answered by later servers too).
const (
	// LegacyKick is the first byte of a legacy answer.
	LegacyKick = 0xFF
	// LegacyProtocol is the protocol number the legacy ping announces (1.6.4).
	LegacyProtocol = 74
	// MaxLegacyChars bounds a legacy answer's string, in UTF-16 code units.
	MaxLegacyChars = 32767
)

// AppendLegacyPing appends the 1.6 form of the legacy ping, FE 01 FA and
// the MC|PingHost plugin message with host and port; servers of 1.4 and
// 1.5 read the FE 01 and ignore the rest.
func AppendLegacyPing(b []byte, host string, port uint16) ([]byte, error) {
	hostUnits := utf16.Encode([]rune(host))
	if len(hostUnits) > MaxHost {
		return b, wire.NewDecodeError("server address", 0, wire.ErrTooLong)
	}
	const channel = "MC|PingHost"
	b = append(b, 0xFE, 0x01, 0xFA)
	b = append(b, 0, byte(len(channel)))
	for _, c := range channel {
		b = append(b, 0, byte(c))
	}
	rest := 1 + 2 + 2*len(hostUnits) + 4
	b = append(b, byte(rest>>8), byte(rest), LegacyProtocol, byte(len(hostUnits)>>8), byte(len(hostUnits)))
	for _, u := range hostUnits {
		b = append(b, byte(u>>8), byte(u))
	}
	return append(b, 0, 0, byte(port>>8), byte(port)), nil
}

// LegacyStatus is a legacy answer's fields, as UTF-8. Decode reuses its
// buffer; the fields alias it.
type LegacyStatus struct {
	// Protocol and Version are empty in the pre-1.4 form.
	Protocol, Version, MOTD, Online, Max []byte
	buf                                  []byte
}

// ErrNotLegacy reports an answer that is not a legacy kick packet.
var ErrNotLegacy = errors.New("not a legacy ping answer")

// Decode parses a whole legacy answer: FF, a big-endian uint16 length in
// UTF-16 code units, then the UTF-16BE string, either
// "§1\0protocol\0version\0motd\0online\0max" (1.4 and later) or
// "motd§online§max" (earlier). wire.ErrTruncated means more bytes may
// complete it.
func (s *LegacyStatus) Decode(b []byte) error {
	*s = LegacyStatus{buf: s.buf[:0]}
	r := wire.NewReader(b)
	if r.U8("packet id") != LegacyKick {
		if r.Err() != nil {
			return wire.ErrTruncated
		}
		return wire.NewDecodeError("packet id", 0, ErrNotLegacy)
	}
	n := int(r.U16BE("length"))
	if r.Err() != nil {
		return wire.ErrTruncated
	}
	if n > MaxLegacyChars {
		return wire.NewDecodeError("length", 1, wire.ErrRange)
	}
	raw := r.Bytes("string", 2*n)
	if r.Err() != nil {
		return wire.ErrTruncated
	}
	if r.Len() != 0 {
		return wire.NewDecodeError("string", 3+2*n, wire.ErrTooLong)
	}
	for i := 0; i < n; i++ {
		u := rune(raw[2*i])<<8 | rune(raw[2*i+1])
		if utf16.IsSurrogate(u) && i+1 < n {
			u2 := rune(raw[2*i+2])<<8 | rune(raw[2*i+3])
			if d := utf16.DecodeRune(u, u2); d != utf8.RuneError {
				u = d
				i++
			}
		}
		s.buf = utf8.AppendRune(s.buf, u)
	}
	str := s.buf
	if len(str) >= 3 && str[0] == 0xC2 && str[1] == 0xA7 && str[2] == '1' { // "§1"
		var f [6][]byte
		k := 0
		start := 0
		for i := 0; i <= len(str); i++ {
			if i == len(str) || str[i] == 0 {
				if k == len(f) {
					return wire.NewDecodeError("string", 3, wire.ErrTooLong)
				}
				f[k] = str[start:i:i]
				k++
				start = i + 1
			}
		}
		if k != 6 {
			return wire.NewDecodeError("string", 3, wire.ErrTruncated)
		}
		s.Protocol, s.Version, s.MOTD, s.Online, s.Max = f[1], f[2], f[3], f[4], f[5]
		return nil
	}
	// motd§online§max: the last two § separate the counts.
	sep := []byte("\u00a7")
	last := lastIndex(str, sep)
	if last < 0 {
		return wire.NewDecodeError("string", 3, ErrNotLegacy)
	}
	mid := lastIndex(str[:last], sep)
	if mid < 0 {
		return wire.NewDecodeError("string", 3, ErrNotLegacy)
	}
	s.MOTD, s.Online, s.Max = str[:mid:mid], str[mid+2:last:last], str[last+2:]
	return nil
}

func lastIndex(b, sep []byte) int {
	for i := len(b) - len(sep); i >= 0; i-- {
		if b[i] == sep[0] && b[i+1] == sep[1] {
			return i
		}
	}
	return -1
}

// AppendLegacyAnswer appends a 1.4+ legacy answer (a server's side, for
// tests and fuzzing). Fields must not hold NUL.
func AppendLegacyAnswer(b []byte, protocol, version, motd, online, max string) ([]byte, error) {
	s := "\u00a71\x00" + protocol + "\x00" + version + "\x00" + motd + "\x00" + online + "\x00" + max
	units := utf16.Encode([]rune(s))
	if len(units) > MaxLegacyChars {
		return b, wire.NewDecodeError("string", 3, wire.ErrTooLong)
	}
	b = append(b, LegacyKick, byte(len(units)>>8), byte(len(units)))
	for _, u := range units {
		b = append(b, byte(u>>8), byte(u))
	}
	return b, nil
}
