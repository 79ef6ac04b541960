package freeciv

import (
	"encoding/binary"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Packet types of the initial protocol.
const (
	PacketServerJoinReq   = 4 // client → server: who joins, with which capabilities
	PacketServerJoinReply = 5 // server → client: accepted or refused, and why
)

// Bounds of the join packets, header included.
const (
	// MinJoinReqLen is a JOIN_REQ with three empty strings.
	MinJoinReqLen = initialHeaderLen + 3 + 3*4
	// MaxJoinReqLen is a JOIN_REQ with every string at its bound.
	MaxJoinReqLen = initialHeaderLen + MaxLenName + MaxLenCapstr + MaxLenName + 3*4
	// MinJoinReplyLen is a JOIN_REPLY with three empty strings. The largest
	// is bounded by MaxLenPacket, below what its string bounds add up to.
	MinJoinReplyLen = initialHeaderLen + 1 + 3 + 2

	initialHeaderLen = 3 // uint16 length, uint8 type
)

var errJoinTooLong = errors.New("freeciv: join packet longer than MaxLenPacket")

// JoinReq is PACKET_SERVER_JOIN_REQ, the first packet a client sends. Like
// every packet of the initial protocol it travels with the 1-byte type and
// is not delta-encoded: its fields follow the header in order.
type JoinReq struct {
	Username     []byte // at most MaxLenName−1 bytes
	Capability   []byte // space-separated capabilities, at most MaxLenCapstr−1 bytes
	VersionLabel []byte // a suffix to the version number, may be empty; at most MaxLenName−1 bytes
	Major        uint32
	Minor        uint32
	Patch        uint32
}

// Decode parses a whole JOIN_REQ packet, header included. The length field
// must equal len(packet), the type must be 4, and the fields must fill the
// packet exactly. The byte slices alias packet.
func (m *JoinReq) Decode(packet []byte) error {
	r, err := initialPacket(packet, PacketServerJoinReq)
	if err != nil {
		return err
	}
	m.decodeBody(&r)
	return endOfPacket(&r)
}

func (m *JoinReq) decodeBody(r *DataReader) {
	m.Username = r.String("username", MaxLenName)
	m.Capability = r.String("capability", MaxLenCapstr)
	m.VersionLabel = r.String("version_label", MaxLenName)
	m.Major = r.U32BE("major_version")
	m.Minor = r.U32BE("minor_version")
	m.Patch = r.U32BE("patch_version")
}

// Len is the encoded size of m, header included.
func (m *JoinReq) Len() int {
	return initialHeaderLen + len(m.Username) + len(m.Capability) + len(m.VersionLabel) + 3 + 3*4
}

// AppendTo appends m as a whole packet with the 1-byte type header. It
// refuses a string that contains a NUL or does not fit its field; on error b
// is returned unchanged.
func (m *JoinReq) AppendTo(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, PacketServerJoinReq)
	var err error
	if b, err = AppendString(b, m.Username, MaxLenName); err != nil {
		return b[:start], err
	}
	if b, err = AppendString(b, m.Capability, MaxLenCapstr); err != nil {
		return b[:start], err
	}
	if b, err = AppendString(b, m.VersionLabel, MaxLenName); err != nil {
		return b[:start], err
	}
	b = AppendU32(b, m.Major)
	b = AppendU32(b, m.Minor)
	b = AppendU32(b, m.Patch)
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b, nil
}

// JoinReply is PACKET_SERVER_JOIN_REPLY, the server's answer to a JoinReq,
// sent with the 1-byte type and not delta-encoded. When YouCanJoin is true
// both directions switch to the 2-byte type for every packet after it.
type JoinReply struct {
	YouCanJoin    bool
	Message       []byte // why the join was refused, or a greeting; < MaxLenMsg bytes
	Capability    []byte // the server's capabilities; < MaxLenCapstr bytes
	ChallengeFile []byte // < MaxLenPath bytes
	ConnID        int16  // the client's connection id on the server
}

// Decode parses a whole JOIN_REPLY packet, header included, under the same
// rules as [JoinReq.Decode], and refuses one longer than MaxLenPacket. The
// byte slices alias packet.
func (m *JoinReply) Decode(packet []byte) error {
	r, err := initialPacket(packet, PacketServerJoinReply)
	if err != nil {
		return err
	}
	m.YouCanJoin = r.Bool("you_can_join")
	m.Message = r.String("message", MaxLenMsg)
	m.Capability = r.String("capability", MaxLenCapstr)
	m.ChallengeFile = r.String("challenge_file", MaxLenPath)
	m.ConnID = r.S16("conn_id")
	return endOfPacket(&r)
}

// Len is the encoded size of m, header included.
func (m *JoinReply) Len() int {
	return initialHeaderLen + 1 + len(m.Message) + len(m.Capability) + len(m.ChallengeFile) + 3 + 2
}

// AppendTo appends m as a whole packet with the 1-byte type header. It
// refuses a string that contains a NUL or does not fit its field, and a
// packet longer than MaxLenPacket; on error b is returned unchanged.
func (m *JoinReply) AppendTo(b []byte) ([]byte, error) {
	if m.Len() > MaxLenPacket {
		return b, errJoinTooLong
	}
	start := len(b)
	b = append(b, 0, 0, PacketServerJoinReply)
	b = AppendBool(b, m.YouCanJoin)
	var err error
	if b, err = AppendString(b, m.Message, MaxLenMsg); err != nil {
		return b[:start], err
	}
	if b, err = AppendString(b, m.Capability, MaxLenCapstr); err != nil {
		return b[:start], err
	}
	if b, err = AppendString(b, m.ChallengeFile, MaxLenPath); err != nil {
		return b[:start], err
	}
	b = AppendS16(b, m.ConnID)
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b, nil
}

// initialPacket checks the 1-byte type header of a whole packet and returns
// a reader positioned at its body.
func initialPacket(packet []byte, ptype uint8) (DataReader, error) {
	r := NewDataReader(packet)
	length := int(r.U16BE("length"))
	t := r.U8("type")
	switch {
	case r.Err() != nil:
		return r, r.Err()
	case len(packet) > MaxLenPacket:
		return r, wire.NewDecodeError("length", 0, wire.ErrTooLong)
	case length > len(packet):
		return r, wire.NewDecodeError("length", 0, wire.ErrTruncated)
	case length < len(packet):
		return r, wire.NewDecodeError("length", 0, wire.ErrTooLong)
	case t != ptype:
		return r, wire.NewDecodeError("type", 2, ErrType)
	}
	return r, nil
}

// endOfPacket reports the reader's error, or bytes left after the last
// field: the layouts are fixed, so a longer packet is not one of them.
func endOfPacket(r *DataReader) error {
	if err := r.Err(); err != nil {
		return err
	}
	if r.Len() != 0 {
		return wire.NewDecodeError("packet", r.Offset(), wire.ErrTooLong)
	}
	return nil
}

// PlausibleJoinReq tells a protocol matcher whether a TCP stream that
// starts with b is a Freeciv client's: ok when b starts with a whole
// JOIN_REQ (b may go on with later bytes) whose length field lies in
// [MinJoinReqLen, MaxJoinReqLen], whose type byte is 4 and whose strings
// end within their bounds and fill the packet with the three version
// numbers exactly; more when b is too short to tell and nothing in it rules
// a JOIN_REQ out yet. A matcher needs at most MaxJoinReqLen bytes.
func PlausibleJoinReq(b []byte) (ok, more bool) {
	n := len(b)
	if n >= 2 {
		length := int(binary.BigEndian.Uint16(b))
		if length < MinJoinReqLen || length > MaxJoinReqLen {
			return false, false
		}
		if n >= length {
			var m JoinReq
			return m.Decode(b[:length]) == nil, false
		}
	}
	if n >= 3 && b[2] != PacketServerJoinReq {
		return false, false
	}
	if n <= initialHeaderLen {
		return false, true
	}
	// A proper prefix of the packet: the fields present must be well formed
	// and only the end of the input may stop the decoding.
	r := NewDataReader(b[initialHeaderLen:])
	var m JoinReq
	m.decodeBody(&r)
	return false, errors.Is(r.Err(), wire.ErrTruncated)
}
