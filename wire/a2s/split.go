package a2s

import (
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/gamegate/gamegate/wire"
)

// Layout is the header layout of a split message's fragments.
//
//	Source:       int32 -2, int32 ID, byte total, byte number, int16 max size
//	SourceNoSize: int32 -2, int32 ID, byte total, byte number
//	GoldSrc:      int32 -2, int32 ID, byte number<<4 | total
//
// In the Source layouts an ID with its top bit set marks a message
// compressed with bzip2 before it was cut; the first fragment then also
// carries int32 decompressed size and int32 CRC32 of the decompressed
// message.
type Layout uint8

// Layouts. LayoutAuto is for a [Reassembler] only: it tells the layout from
// the first fragment, whose payload begins with the message header (or a
// bzip2 stream) at an offset each layout fixes.
const (
	LayoutAuto Layout = iota
	LayoutSource
	LayoutSourceNoSize
	LayoutGoldSrc
)

func (l Layout) String() string {
	switch l {
	case LayoutAuto:
		return "auto"
	case LayoutSource:
		return "source"
	case LayoutSourceNoSize:
		return "source_no_size"
	case LayoutGoldSrc:
		return "goldsrc"
	}
	return "unknown"
}

// LayoutFor returns the layout a server of this AppID and protocol splits
// its answers with, as the wiki lists them: GoldSrc games (AppIDs below
// 200) their own layout, AppIDs 215, 17550 and 17700 and AppID 240 at
// protocol 7 the Source layout without the size field, others the Source
// layout.
func LayoutFor(appID uint16, protocol byte) Layout {
	switch {
	case appID < 200:
		return LayoutGoldSrc
	case appID == 215 || appID == 17550 || appID == 17700 || appID == 240 && protocol == 7:
		return LayoutSourceNoSize
	}
	return LayoutSource
}

// Split-message bounds.
const (
	// CompressedFlag is the ID bit that marks a compressed message.
	CompressedFlag uint32 = 1 << 31
	// DefaultMaxPayload is the fragment payload size Source servers use.
	DefaultMaxPayload = 1248
	// MaxGoldSrcPackets is the most fragments the GoldSrc layout counts.
	MaxGoldSrcPackets = 15
	// MaxSourcePackets is the most fragments the Source layouts count.
	MaxSourcePackets = 255
	// DefaultMaxPackets and DefaultMaxMessage bound a Reassembler whose
	// limits are zero.
	DefaultMaxPackets = 64
	DefaultMaxMessage = 128 << 10
	// MaxDatagram is the largest UDP payload.
	MaxDatagram = 65507
)

// More errors.
var (
	// ErrChecksum reports a decompressed message whose CRC32 or size is
	// not the one its first fragment announced.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrCompression reports a compressed message that does not
	// decompress.
	ErrCompression = errors.New("bad bzip2 data")
	// ErrConcatenated reports a compressed message whose bzip2 data go on
	// after the end of its first stream. Servers compress an answer as one
	// stream; a decoder would size a block buffer anew for each further
	// stream, as its header says, bounded by nothing.
	ErrConcatenated = errors.New("bzip2 data after the end of the first stream")
)

// SplitHeader is the header of one fragment of a split message.
type SplitHeader struct {
	ID     uint32 // CompressedFlag set: compressed (Source layouts only)
	Total  byte
	Number byte
	// MaxSize is the server's fragment payload size (LayoutSource only).
	MaxSize uint16
	// Size and CRC are the decompressed message's length and CRC32
	// (IEEE), in the first fragment of a compressed message only.
	Size, CRC uint32
}

// Compressed reports whether the ID marks a compressed message.
func (h *SplitHeader) Compressed(l Layout) bool {
	return l != LayoutGoldSrc && h.ID&CompressedFlag != 0
}

// Len is the header's encoded length in layout l.
func (h *SplitHeader) Len(l Layout) int {
	n := 10
	switch l {
	case LayoutGoldSrc:
		return 9
	case LayoutSource:
		n = 12
	}
	if h.Number == 0 && h.Compressed(l) {
		n += 8
	}
	return n
}

// AppendTo appends the header in layout l.
func (h *SplitHeader) AppendTo(b []byte, l Layout) ([]byte, error) {
	if h.Total == 0 || h.Number >= h.Total || l == LayoutGoldSrc && h.Total > MaxGoldSrcPackets {
		return b, wire.NewDecodeError("number", len(b)+8, wire.ErrRange)
	}
	b = binary.LittleEndian.AppendUint32(b, HeaderSplit)
	b = binary.LittleEndian.AppendUint32(b, h.ID)
	switch l {
	case LayoutGoldSrc:
		return append(b, h.Number<<4|h.Total), nil
	case LayoutSource:
		b = append(b, h.Total, h.Number)
		b = binary.LittleEndian.AppendUint16(b, h.MaxSize)
	case LayoutSourceNoSize:
		b = append(b, h.Total, h.Number)
	default:
		return b, wire.NewDecodeError("layout", len(b), wire.ErrRange)
	}
	if h.Number == 0 && h.Compressed(l) {
		b = binary.LittleEndian.AppendUint32(b, h.Size)
		b = binary.LittleEndian.AppendUint32(b, h.CRC)
	}
	return b, nil
}

// Decode parses a fragment's header in layout l (not LayoutAuto) and
// returns its payload, which aliases b.
func (h *SplitHeader) Decode(b []byte, l Layout) ([]byte, error) {
	r := wire.NewReader(b)
	if r.U32LE("header") != HeaderSplit && r.Err() == nil {
		return nil, wire.NewDecodeError("header", 0, wire.ErrMagic)
	}
	*h = SplitHeader{ID: r.U32LE("id")}
	switch l {
	case LayoutGoldSrc:
		v := r.U8("number")
		h.Number, h.Total = v>>4, v&0x0F
	case LayoutSource, LayoutSourceNoSize:
		h.Total = r.U8("total")
		h.Number = r.U8("number")
		if l == LayoutSource {
			h.MaxSize = r.U16LE("size")
		}
	default:
		return nil, wire.NewDecodeError("layout", 0, wire.ErrRange)
	}
	if r.Err() == nil && (h.Total == 0 || h.Number >= h.Total) {
		return nil, wire.NewDecodeError("number", 8, wire.ErrRange)
	}
	if h.Number == 0 && h.Compressed(l) {
		h.Size = r.U32LE("decompressed_size")
		h.CRC = r.U32LE("crc32")
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	return r.Rest(), nil
}

// sniff returns the layout under which datagram b is the first fragment of
// a split message, or LayoutAuto when it is not recognisably one.
func sniff(b []byte) Layout {
	single := func(off int) bool {
		return len(b) >= off+HeaderLen && binary.LittleEndian.Uint32(b[off:]) == HeaderSingle
	}
	bz := func(off int) bool {
		return len(b) >= off+4 && b[off] == 'B' && b[off+1] == 'Z' && b[off+2] == 'h' && b[off+3] >= '1' && b[off+3] <= '9'
	}
	if len(b) < 10 || binary.LittleEndian.Uint32(b) != HeaderSplit {
		return LayoutAuto
	}
	compressed := binary.LittleEndian.Uint32(b[4:])&CompressedFlag != 0
	switch {
	case b[8]>>4 == 0 && b[8]&0x0F != 0 && single(9):
		return LayoutGoldSrc
	case b[9] != 0:
		return LayoutAuto
	case !compressed && single(12), compressed && bz(20):
		return LayoutSource
	case !compressed && single(10), compressed && bz(18):
		return LayoutSourceNoSize
	}
	return LayoutAuto
}

// Reassembler joins the fragments of one split message, in any order, and
// decompresses it when it was compressed. It copies what it is given, so
// the caller may reuse its read buffer; it never holds more than MaxPackets
// datagrams and MaxMessage bytes, and never decompresses more than
// MaxMessage bytes.
//
// A datagram with header -1 is a whole message and completes at once.
// Fragments of another ID than the first one seen are ignored (a late
// fragment of an earlier answer). The zero Reassembler is ready; after an
// error it keeps returning that error until Reset.
type Reassembler struct {
	// Layout of the fragments; LayoutAuto tells it from the first one.
	Layout Layout
	// MaxPackets bounds the fragments of one message. Default:
	// DefaultMaxPackets.
	MaxPackets int
	// MaxMessage bounds the message, compressed and decompressed, in
	// bytes. Default: DefaultMaxMessage.
	MaxMessage int

	layout   Layout
	raw      [][]byte // copies of the fragments seen, before the layout is known
	rawBytes int
	id       uint32
	haveID   bool
	header   SplitHeader // of fragment 0, once seen
	total    int
	frags    [MaxSourcePackets][]byte
	have     int
	message  []byte
	joined   []byte
	done     bool
	err      error
}

// Reset readies the Reassembler for the next message, keeping its buffers.
func (r *Reassembler) Reset() {
	for i := range r.raw {
		r.raw[i] = r.raw[i][:0]
	}
	clear(r.frags[:r.total])
	*r = Reassembler{Layout: r.Layout, MaxPackets: r.MaxPackets, MaxMessage: r.MaxMessage,
		raw: r.raw[:0], message: r.message[:0], joined: r.joined[:0]}
}

func (r *Reassembler) limits() (packets, size int) {
	packets, size = r.MaxPackets, r.MaxMessage
	if packets <= 0 || packets > MaxSourcePackets {
		packets = min(DefaultMaxPackets, MaxSourcePackets)
		if r.MaxPackets > MaxSourcePackets {
			packets = MaxSourcePackets
		}
	}
	if size <= 0 {
		size = DefaultMaxMessage
	}
	return packets, size
}

// Add takes one datagram and reports whether the message is complete.
func (r *Reassembler) Add(datagram []byte) (complete bool, err error) {
	if r.err != nil {
		return false, r.err
	}
	if r.done {
		return true, nil
	}
	maxPackets, maxSize := r.limits()
	if len(datagram) >= 4 && binary.LittleEndian.Uint32(datagram) == HeaderSingle {
		if len(datagram) > maxSize {
			return false, r.fail(wire.NewDecodeError("message", maxSize, wire.ErrTooLong))
		}
		r.message = append(r.message[:0], datagram...)
		r.done = true
		return true, nil
	}
	if len(datagram) < 9 || binary.LittleEndian.Uint32(datagram) != HeaderSplit {
		return false, r.fail(wire.NewDecodeError("header", 0, wire.ErrMagic))
	}
	id := binary.LittleEndian.Uint32(datagram[4:])
	if r.haveID && id != r.id {
		return false, nil
	}
	r.id, r.haveID = id, true
	if len(r.raw) >= maxPackets || r.rawBytes+len(datagram) > maxSize+maxPackets*20 {
		return false, r.fail(wire.NewDecodeError("fragments", r.rawBytes, wire.ErrTooLong))
	}
	var slot []byte
	if n := len(r.raw); n < cap(r.raw) {
		slot = r.raw[:n+1][n][:0]
	}
	r.raw = append(r.raw, append(slot, datagram...))
	r.rawBytes += len(datagram)
	if r.layout == LayoutAuto {
		r.layout = r.Layout
		if r.layout == LayoutAuto {
			r.layout = sniff(datagram)
		}
		if r.layout == LayoutAuto {
			return false, nil // a later fragment, kept until the first arrives
		}
		for _, d := range r.raw {
			if err := r.place(d, maxPackets); err != nil {
				return false, r.fail(err)
			}
		}
	} else if err := r.place(r.raw[len(r.raw)-1], maxPackets); err != nil {
		return false, r.fail(err)
	}
	if r.total == 0 || r.have < r.total {
		return false, nil
	}
	if err := r.finish(maxSize); err != nil {
		return false, r.fail(err)
	}
	r.done = true
	return true, nil
}

func (r *Reassembler) fail(err error) error {
	r.err = err
	return err
}

// place files one fragment under its number.
func (r *Reassembler) place(d []byte, maxPackets int) error {
	var h SplitHeader
	payload, err := h.Decode(d, r.layout)
	if err != nil {
		return err
	}
	if int(h.Total) > maxPackets {
		return wire.NewDecodeError("total", 8, wire.ErrTooLong)
	}
	if r.total == 0 {
		r.total = int(h.Total)
	} else if int(h.Total) != r.total {
		return wire.NewDecodeError("total", 8, wire.ErrRange)
	}
	if r.frags[h.Number] != nil {
		return nil // a duplicate: keep the first
	}
	if h.Number == 0 {
		r.header = h
	}
	r.frags[h.Number] = payload[:len(payload):len(payload)]
	r.have++
	return nil
}

// finish joins the fragments and decompresses the message if it must.
func (r *Reassembler) finish(maxSize int) error {
	r.joined = r.joined[:0]
	for _, f := range r.frags[:r.total] {
		if len(r.joined)+len(f) > maxSize {
			return wire.NewDecodeError("message", maxSize, wire.ErrTooLong)
		}
		r.joined = append(r.joined, f...)
	}
	h := &r.header
	if !h.Compressed(r.layout) {
		r.message = append(r.message[:0], r.joined...)
		return nil
	}
	if int64(h.Size) > int64(maxSize) || h.Size < HeaderLen {
		return wire.NewDecodeError("decompressed_size", 12, wire.ErrRange)
	}
	msg, err := Decompress(r.message[:0], r.joined, h.Size, h.CRC)
	r.message = msg
	return err
}

// Decompress appends to dst the bzip2 data decompressed, which must be
// exactly size bytes with the given CRC32 (IEEE) and one bzip2 stream. It
// never decompresses more than size+1 bytes, and the decoder's block buffer
// is the smallest that holds size bytes.
func Decompress(dst, data []byte, size, crc uint32) ([]byte, error) {
	if hasSecondStream(data) {
		return dst, wire.NewDecodeError("payload", 20, ErrConcatenated)
	}
	start := len(dst)
	dst = growTo(dst, start+int(size)+1)
	n, err := io.ReadFull(bzip2.NewReader(boundedLevel(data, size)), dst[start:])
	dst = dst[:start+n]
	switch {
	case err == nil:
		return dst, wire.NewDecodeError("decompressed_size", 12, ErrChecksum) // more than size
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
	default:
		return dst, wire.NewDecodeError("payload", 20, ErrCompression)
	}
	if n != int(size) {
		return dst, wire.NewDecodeError("decompressed_size", 12, ErrChecksum)
	}
	if crc32.ChecksumIEEE(dst[start:]) != crc {
		return dst, wire.NewDecodeError("crc32", 16, ErrChecksum)
	}
	return dst, nil
}

// boundedLevel returns a reader of the bzip2 stream data whose header
// declares the smallest block size that can hold size bytes. The level digit
// only sizes the decoder's block buffer (100 000 × level × 4 bytes, which Go
// allocates for every stream) and is not covered by any checksum; a block
// that does not fit is a decoding error, so a smaller level cannot let more
// through. RLE1, bzip2's first stage, turns 4 equal bytes into 5 at worst.
func boundedLevel(data []byte, size uint32) io.Reader {
	if len(data) < 4 || data[0] != 'B' || data[1] != 'Z' || data[2] != 'h' || data[3] < '1' || data[3] > '9' {
		return bytes.NewReader(data)
	}
	need := (int64(size)*5/4+16)/100000 + 1
	level := min(int64(data[3]-'0'), need)
	return io.MultiReader(bytes.NewReader([]byte{'B', 'Z', 'h', byte('0' + level)}), bytes.NewReader(data[4:]))
}

// bzip2's end-of-stream marker: a 48-bit magic number (the square root of
// pi) and the stream's 32-bit CRC, then padding to a whole byte.
const (
	bzip2FinalMagic = 0x177245385090
	bzip2FinalBits  = 48 + 32
)

// hasSecondStream reports whether a bzip2 stream follows the first one in
// data: whether some "BZ" after the first byte is preceded, within the last
// 7 bits of padding, by an end-of-stream marker. That is exactly where Go's
// decoder looks for a concatenated stream (and where it would set up a new
// block buffer at the level that stream declares); inside a block the
// pattern occurs by chance about once in 2^61 positions.
func hasSecondStream(data []byte) bool {
	for i := 1; i < len(data)-1; i++ {
		if data[i] != 'B' || data[i+1] != 'Z' || i*8 < bzip2FinalBits {
			continue
		}
		// The 88 bits before position i, as an integer (10 bytes fit a
		// uint64 only in part: take the last 8 and the 2 before apart).
		var tail uint64
		for _, b := range data[i-8 : i] {
			tail = tail<<8 | uint64(b)
		}
		var head uint64
		for _, b := range data[max(i-11, 0) : i-8] {
			head = head<<8 | uint64(b)
		}
		for pad := 0; pad < 8; pad++ {
			// The 48 bits that end 32+pad bits before position i.
			end := 32 + pad // bits from the magic's end to position i
			var magic uint64
			if end+48 <= 64 {
				magic = tail >> end & (1<<48 - 1)
			} else {
				magic = (tail>>end | head<<(64-end)) & (1<<48 - 1)
			}
			if magic == bzip2FinalMagic {
				return true
			}
		}
	}
	return false
}

func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}

// Message returns the complete message, decompressed, starting with its
// header (int32 -1). It aliases the Reassembler's buffer and is valid until
// the next Add or Reset.
func (r *Reassembler) Message() []byte {
	if !r.done {
		return nil
	}
	return r.message
}

// Compressed returns the reassembled bzip2 data of a compressed message and
// the size and CRC32 its first fragment announced; ok is false for a
// message that was not compressed. data aliases the Reassembler's buffer.
func (r *Reassembler) Compressed() (data []byte, size, crc uint32, ok bool) {
	if !r.done || !r.header.Compressed(r.layout) || r.total == 0 {
		return nil, 0, 0, false
	}
	return r.joined, r.header.Size, r.header.CRC, true
}

// SplitLayout returns the layout the fragments had (LayoutAuto for a
// message that came whole or before the layout is known).
func (r *Reassembler) SplitLayout() Layout { return r.layout }

// Splitter cuts messages into fragments.
type Splitter struct {
	Layout Layout // not LayoutAuto
	// MaxPayload is the payload size of each fragment, and the max size
	// field of LayoutSource. Default: DefaultMaxPayload.
	MaxPayload int
}

// Split appends to dst the datagrams of payload cut into fragments of
// message id, each in a fresh slice of one backing array. A compressed
// payload (id with CompressedFlag, Source layouts) is bzip2 data whose
// decompressed size and CRC32 are size and crc; for others size and crc are
// ignored. A payload that fits one fragment is still split (one fragment):
// callers send a message that fits a datagram as it is.
func (s Splitter) Split(dst [][]byte, id uint32, payload []byte, size, crc uint32) ([][]byte, error) {
	chunk := s.MaxPayload
	if chunk <= 0 {
		chunk = DefaultMaxPayload
	}
	if chunk > 0xFFFF {
		return dst, wire.NewDecodeError("size", 10, wire.ErrRange)
	}
	if s.Layout == LayoutGoldSrc {
		id &^= CompressedFlag // GoldSrc has no compression
	}
	n := max(1, (len(payload)+chunk-1)/chunk)
	limit := MaxSourcePackets
	if s.Layout == LayoutGoldSrc {
		limit = MaxGoldSrcPackets
	}
	if n > limit {
		return dst, wire.NewDecodeError("total", 8, wire.ErrTooLong)
	}
	h := SplitHeader{ID: id, Total: byte(n), MaxSize: uint16(chunk), Size: size, CRC: crc}
	buf := make([]byte, 0, len(payload)+n*h.Len(s.Layout)+8)
	for i := 0; i < n; i++ {
		h.Number = byte(i)
		start := len(buf)
		var err error
		if buf, err = h.AppendTo(buf, s.Layout); err != nil {
			return dst, err
		}
		end := min(len(payload), (i+1)*chunk)
		buf = append(buf, payload[i*chunk:end]...)
		dst = append(dst, buf[start:len(buf):len(buf)])
	}
	return dst, nil
}
