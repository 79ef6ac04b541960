package freeciv

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Protocol constants.
const (
	// MaxLenPacket is the largest ordinary packet, header included.
	MaxLenPacket = 4096
	// CompressionBorder is the smallest length field that marks a
	// compressed chunk instead of an ordinary packet: 16·1024 + 1.
	CompressionBorder = 16385
	// JumboSize in the length field marks a jumbo chunk, whose real size
	// follows as a uint32.
	JumboSize = 0xFFFF
	// JumboBorder is the smallest chunk size (2-byte length field plus
	// compressed bytes) that no longer fits an ordinary chunk's length
	// field: 64·1024 − CompressionBorder − 1.
	JumboBorder = 64*1024 - CompressionBorder - 1

	// MaxLenName bounds a user name or version label, NUL included.
	MaxLenName = 48
	// MaxLenCapstr bounds a capability string, NUL included.
	MaxLenCapstr = 512
	// MaxLenMsg bounds a server message, NUL included.
	MaxLenMsg = 1536
	// MaxLenPath bounds a file path, NUL included.
	MaxLenPath = 4095

	// DefaultPort is the game server's default TCP port.
	DefaultPort = 5556

	// chunkHeaderLen and jumboHeaderLen are the framing bytes in front of a
	// chunk's compressed data.
	chunkHeaderLen = 2
	jumboHeaderLen = 6
)

// Sentinel errors of this package, beyond the wire sentinels it also uses.
// Decoders return them wrapped in a [*wire.DecodeError].
var (
	// ErrNeedMore is returned by [Splitter.Next] when the buffered bytes do
	// not yet hold a whole frame. It is not sticky: write more and call
	// Next again.
	ErrNeedMore = errors.New("freeciv: need more bytes")
	// ErrBufferFull is returned by [Splitter.Write] when the bytes do not all
	// fit under the splitter's bound; call Next, then write the rest.
	ErrBufferFull = errors.New("freeciv: splitter buffer full")
	// ErrNestedChunk reports a compressed chunk inside decompressed data.
	ErrNestedChunk = errors.New("freeciv: compressed chunk inside a compressed chunk")
	// ErrDecompressedTooLarge reports a chunk that decompresses to more than
	// the configured limit.
	ErrDecompressedTooLarge = errors.New("freeciv: decompressed chunk exceeds the limit")
	// ErrCorruptChunk reports compressed bytes that are not exactly one
	// valid zlib stream.
	ErrCorruptChunk = errors.New("freeciv: corrupt compressed chunk")
	// ErrType reports a packet type other than the one a decoder reads.
	ErrType = errors.New("freeciv: unexpected packet type")
	// ErrTypeWidth reports a type width other than 1 or 2 bytes.
	ErrTypeWidth = errors.New("freeciv: type width must be 1 or 2")
)

// Encoder errors. They carry no detail because the caller holds the value
// that was refused, and being fixed values they cost no allocation.
var (
	errPacketTooLong = errors.New("freeciv: packet longer than MaxLenPacket")
	errTypeRange     = errors.New("freeciv: packet type does not fit the type width")
	errStringLong    = errors.New("freeciv: string does not fit its field")
	errStringNUL     = errors.New("freeciv: string contains a NUL byte")
)

// HeaderLen is the size of a packet header for a type width of 1 or 2: the
// uint16 length and the type. It returns 0 for any other width.
func HeaderLen(typeWidth int) int {
	switch typeWidth {
	case 1, 2:
		return 2 + typeWidth
	}
	return 0
}

// AppendPacket appends an ordinary packet: the big-endian length (counting
// the whole packet), the type in typeWidth bytes, and body. It refuses a
// type width other than 1 or 2, a type that does not fit the width, and a
// packet longer than [MaxLenPacket] (a length of [CompressionBorder] or more
// would read as a compressed chunk). It allocates nothing when dst has room.
func AppendPacket(dst []byte, typeWidth int, ptype uint16, body []byte) ([]byte, error) {
	h := HeaderLen(typeWidth)
	switch {
	case h == 0:
		return dst, ErrTypeWidth
	case typeWidth == 1 && ptype > 0xFF:
		return dst, errTypeRange
	case len(body) > MaxLenPacket-h:
		return dst, errPacketTooLong
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(h+len(body)))
	if typeWidth == 1 {
		dst = append(dst, byte(ptype))
	} else {
		dst = binary.BigEndian.AppendUint16(dst, ptype)
	}
	return append(dst, body...), nil
}

// DataReader reads Freeciv's data types from a packet body: the big-endian
// integers of the embedded [wire.Reader] (U8, U16BE, U32BE) and the methods
// below. Like wire.Reader it never reads past its input, records the first
// error as a [*wire.DecodeError] and returns zero values after it.
type DataReader struct {
	wire.Reader
}

// NewDataReader returns a DataReader over b.
func NewDataReader(b []byte) DataReader { return DataReader{wire.NewReader(b)} }

// Bool reads a BOOL: one byte that must be 0 or 1, else [wire.ErrRange].
func (r *DataReader) Bool(field string) bool {
	return r.U8Range(field, 0, 1) == 1
}

// S8 reads a SINT8.
func (r *DataReader) S8(field string) int8 { return int8(r.U8(field)) }

// S16 reads a big-endian SINT16.
func (r *DataReader) S16(field string) int16 { return int16(r.U16BE(field)) }

// S32 reads a big-endian SINT32.
func (r *DataReader) S32(field string) int32 { return int32(r.U32BE(field)) }

// String reads a NUL-terminated STRING of a field whose size, NUL
// included, is size: the NUL must lie within the first size bytes. It
// returns the bytes before the NUL, aliasing the input, and consumes the
// NUL. A string with no NUL in its first size bytes fails with
// [wire.ErrTooLong]: an honest sender never writes one, since the field it
// sends from holds at most size−1 bytes. One whose input ends first fails
// with [wire.ErrTruncated]. A size below 1 fails with [wire.ErrRange].
func (r *DataReader) String(field string, size int) []byte {
	if r.Err() != nil {
		return nil
	}
	if size < 1 {
		r.Fail(field, wire.ErrRange)
		return nil
	}
	peek := r.Reader // a copy: looking ahead must not consume
	rest := peek.Rest()
	n := bytes.IndexByte(rest[:min(len(rest), size)], 0)
	if n < 0 {
		if len(rest) < size {
			r.Fail(field, wire.ErrTruncated)
		} else {
			r.Fail(field, wire.ErrTooLong)
		}
		return nil
	}
	s := r.Bytes(field, n)
	r.Skip(field, 1)
	return s
}

// AppendBool appends a BOOL.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendU16 appends a big-endian UINT16.
func AppendU16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }

// AppendU32 appends a big-endian UINT32.
func AppendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// AppendS16 appends a big-endian SINT16.
func AppendS16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// AppendS32 appends a big-endian SINT32.
func AppendS32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendString appends s and a NUL as a STRING of a field whose size, NUL
// included, is size. It refuses a string containing a NUL (the reader would
// stop there) or longer than size−1 bytes, returning b unchanged.
func AppendString[S ~string | ~[]byte](b []byte, s S, size int) ([]byte, error) {
	if len(s) > size-1 {
		return b, errStringLong
	}
	for i := range len(s) {
		if s[i] == 0 {
			return b, errStringNUL
		}
	}
	b = append(b, s...)
	return append(b, 0), nil
}
