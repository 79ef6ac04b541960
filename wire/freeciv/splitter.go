package freeciv

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/gamegate/gamegate/wire"
)

// Default limits of a [Splitter].
const (
	// DefaultMaxChunk bounds a compressed chunk, framing bytes included.
	DefaultMaxChunk = 1 << 20
	// DefaultMaxDecompressed bounds what one chunk may decompress to.
	DefaultMaxDecompressed = 1 << 20

	// minBuffer is the first allocation of the input buffer: a few TCP
	// reads' worth, so that a stream of small packets never regrows it.
	minBuffer = 16 << 10
	// maxIdleBuffer is the most input buffer an empty splitter keeps.
	maxIdleBuffer = 64 << 10
)

// Frame is one ordinary packet cut from the stream, or from a compressed
// chunk in it. Its slices alias the [Splitter]'s buffers.
type Frame struct {
	Type      uint16 // the packet type, read in the type width in force
	Body      []byte // the bytes after the header
	Packet    []byte // the whole packet: length field, type and body
	FromChunk bool   // the packet came out of a decompressed chunk
}

// Splitter cuts a Freeciv TCP stream into packets, decompressing chunks on
// the way. It does no I/O: the caller writes the bytes it reads, in pieces
// of any size, and calls [Splitter.Next] until it returns [ErrNeedMore].
//
// The zero Splitter is ready to use with the default limits and the initial
// protocol's 1-byte type. Set the limits before the first Write. The type
// width may change between any two calls of Next (see
// [Splitter.SetTypeWidth]); the change applies to the next packet header
// read, whether in the raw stream or in the rest of a decompressed chunk.
//
// Every framing error is sticky: the stream cannot be resynchronised, so
// Write and Next return the same error until [Splitter.Reset]. A Splitter
// serves one stream from one goroutine and must not be copied once used.
type Splitter struct {
	// MaxPacket bounds an ordinary packet, header included. Zero or less
	// means MaxLenPacket (4096); a value above CompressionBorder−1 acts as
	// CompressionBorder−1, since a larger length field marks a chunk.
	MaxPacket int
	// MaxChunk bounds a compressed chunk, framing bytes included. A length
	// field or jumbo length beyond it is refused as soon as it is read,
	// before its bytes are buffered. Zero or less means DefaultMaxChunk.
	MaxChunk int
	// MaxDecompressed bounds the decompressed size of one chunk. Zero or
	// less means DefaultMaxDecompressed.
	MaxDecompressed int
	// SwitchOnJoin makes the splitter switch itself to the 2-byte type right
	// after it returns a JOIN_REPLY that accepts the join (a frame of type 5,
	// read with the 1-byte type, that decodes as a [JoinReply] with
	// YouCanJoin set). Use it on the server-to-client stream; the
	// client-to-server stream never carries the reply, so its owner calls
	// SetTypeWidth(2) when the other direction has seen it.
	SwitchOnJoin bool

	typeWidth int // 0 stands for 1, so that the zero Splitter is valid

	buf   []byte // raw stream bytes; buf[start:] is not yet consumed
	start int
	off   int // stream offset of buf[start], for error reports

	// A chunk being decompressed stays buffered at buf[start:] until its
	// zlib stream ends: zlib reads buf[start+zpos : start+zend], offsets
	// that survive Write moving the unread bytes to the front.
	inChunk    bool
	zdone      bool // the zlib stream has ended and its checksum matched
	zpos, zend int
	chunkLen   int // framing included: what the chunk consumes at its end
	zsrc       chunkSource
	inf        inflater

	// The decompressed window: out[outPos:] is unread, out[0] is at
	// decompressed offset outOff within the chunk.
	out    []byte
	outPos int
	outOff int

	err error
}

// chunkSource feeds the compressed bytes of the chunk in progress to zlib.
// It is an io.ByteReader, so zlib reads nothing past the end of its stream
// and the bytes left over can be counted.
type chunkSource struct{ s *Splitter }

func (c *chunkSource) rest() []byte {
	s := c.s
	return s.buf[s.start+s.zpos : s.start+s.zend]
}

func (c *chunkSource) Read(p []byte) (int, error) {
	r := c.rest()
	if len(r) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r)
	c.s.zpos += n
	return n, nil
}

func (c *chunkSource) ReadByte() (byte, error) {
	r := c.rest()
	if len(r) == 0 {
		return 0, io.EOF
	}
	c.s.zpos++
	return r[0], nil
}

// TypeWidth returns the width in bytes of the type field the next header
// will be read with: 1 in the initial protocol, 2 after the join.
func (s *Splitter) TypeWidth() int {
	if s.typeWidth == 0 {
		return 1
	}
	return s.typeWidth
}

// SetTypeWidth sets the width of the type field of the headers read from now
// on: 1 or 2, else it returns [ErrTypeWidth]. Call it between two calls of
// Next, right after the frame that changes the protocol (the JOIN_REPLY that
// accepts the join): the frames after it, even those already buffered or in
// the same decompressed chunk, are then read with the new width.
func (s *Splitter) SetTypeWidth(w int) error {
	if w != 1 && w != 2 {
		return ErrTypeWidth
	}
	s.typeWidth = w
	return nil
}

// Reset discards all buffered bytes and any error and returns to the 1-byte
// type, keeping the limits and the buffers' memory.
func (s *Splitter) Reset() {
	s.typeWidth = 0
	s.buf, s.start, s.off = s.buf[:0], 0, 0
	s.inChunk = false
	s.out, s.outPos, s.outOff = s.out[:0], 0, 0
	s.err = nil
}

// Buffered is the number of raw stream bytes written but not yet consumed,
// counting a chunk whose packets Next is still returning.
func (s *Splitter) Buffered() int { return len(s.buf) - s.start }

// MaxBuffered is the most raw bytes the splitter holds: the larger of the
// packet and chunk limits, so that the largest frame it accepts always fits.
func (s *Splitter) MaxBuffered() int { return max(s.maxPacket(), s.maxChunk()) }

func (s *Splitter) maxPacket() int {
	switch {
	case s.MaxPacket <= 0:
		return MaxLenPacket
	case s.MaxPacket >= CompressionBorder:
		return CompressionBorder - 1
	}
	return s.MaxPacket
}

func (s *Splitter) maxChunk() int {
	if s.MaxChunk <= 0 {
		return DefaultMaxChunk
	}
	return s.MaxChunk
}

func (s *Splitter) maxDecompressed() int {
	if s.MaxDecompressed <= 0 {
		return DefaultMaxDecompressed
	}
	return s.MaxDecompressed
}

// Write buffers p. It takes as much of p as fits under [Splitter.MaxBuffered]
// and, if that is not all of it, returns the count taken and
// [ErrBufferFull]: call Next until it returns [ErrNeedMore], then write the
// rest. Because the bound is the largest frame accepted, a full buffer
// always holds a whole frame, so this never deadlocks. Write invalidates the
// frames returned so far. It allocates only while the buffer grows towards
// what the stream needs, and again after a buffer grown beyond 64 KiB for a
// large chunk has been released on emptying.
func (s *Splitter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.start == len(s.buf) {
		s.buf, s.start = s.buf[:0], 0
		if cap(s.buf) > maxIdleBuffer {
			// Grown for a large chunk: an idle connection should not keep
			// that much. Large chunks are rare enough to allocate again.
			s.buf = nil
		}
	}
	unread := len(s.buf) - s.start
	n := min(len(p), max(s.MaxBuffered()-unread, 0))
	if len(s.buf)+n > cap(s.buf) {
		// Compact first: the unread bytes are less than one frame.
		m := copy(s.buf, s.buf[s.start:])
		s.buf, s.start = s.buf[:m], 0
		if m+n > cap(s.buf) {
			grown := make([]byte, m, min(max(2*cap(s.buf), m+n, minBuffer), s.MaxBuffered()))
			copy(grown, s.buf)
			s.buf = grown
		}
	}
	s.buf = append(s.buf, p[:n]...)
	if n < len(p) {
		return n, ErrBufferFull
	}
	return n, nil
}

// Next returns the next packet. It returns [ErrNeedMore] when the buffered
// bytes hold no whole frame, and any other error for a stream that breaks
// the framing or the limits: a length field below the header size or above
// MaxPacket, a chunk above MaxChunk or with no compressed bytes, corrupt
// compressed data ([ErrCorruptChunk]), a chunk that decompresses beyond
// MaxDecompressed ([ErrDecompressedTooLarge]), a chunk inside a chunk
// ([ErrNestedChunk]), or a chunk that ends inside a packet. Errors are
// [*wire.DecodeError]s whose Offset counts stream bytes, or, for a packet
// inside a chunk, decompressed bytes of that chunk.
//
// A chunk is decompressed a window at a time as its packets are asked for,
// once all its compressed bytes are buffered: memory stays at a window of
// MaxPacket plus 16 KiB, whatever the chunk expands to, but the packets
// before a fault in a chunk (corruption, the limit, a bad packet) are
// returned before the error.
//
// The frame aliases the splitter's buffers and is valid until the next call
// of any of its methods. Next allocates nothing per packet; starting a
// chunk costs the few allocations of resetting the standard library's zlib
// reader, and each dynamic Huffman block it meets some more.
func (s *Splitter) Next() (Frame, error) {
	if s.err != nil {
		return Frame{}, s.err
	}
	for {
		if s.inChunk {
			f, done, err := s.nextInChunk()
			if !done {
				return f, err
			}
			continue
		}
		b := s.buf[s.start:]
		if len(b) < 2 {
			return Frame{}, ErrNeedMore
		}
		length := int(binary.BigEndian.Uint16(b))
		if length < CompressionBorder {
			w := s.TypeWidth()
			switch {
			case length < HeaderLen(w):
				return Frame{}, s.fail("length", s.off, wire.ErrRange)
			case length > s.maxPacket():
				return Frame{}, s.fail("length", s.off, wire.ErrTooLong)
			case len(b) < length:
				return Frame{}, ErrNeedMore
			}
			f := cutFrame(b[:length:length], w)
			s.start += length
			s.off += length
			s.afterFrame(f)
			return f, nil
		}

		hdr, total := chunkHeaderLen, length-CompressionBorder
		field := "chunk length"
		if length == JumboSize {
			if len(b) < jumboHeaderLen {
				return Frame{}, ErrNeedMore
			}
			hdr, field = jumboHeaderLen, "jumbo length"
			// Compare as uint64: a uint32 may not fit an int everywhere.
			t := uint64(binary.BigEndian.Uint32(b[2:]))
			if t > uint64(s.maxChunk()) {
				return Frame{}, s.fail(field, s.off, wire.ErrTooLong)
			}
			total = int(t)
		}
		switch {
		case total <= hdr:
			return Frame{}, s.fail(field, s.off, wire.ErrRange)
		case total > s.maxChunk():
			return Frame{}, s.fail(field, s.off, wire.ErrTooLong)
		case len(b) < total:
			return Frame{}, ErrNeedMore
		}
		if err := s.beginChunk(hdr, total); err != nil {
			return Frame{}, err
		}
	}
}

// outWindow is the decompressed window's size: a whole packet after the
// unread part of the previous one, with room to decompress in long runs.
func (s *Splitter) outWindow() int { return s.maxPacket() + 16<<10 }

// beginChunk starts decompressing the chunk at buf[start:], whose framing
// the caller has checked and whose bytes are all buffered.
func (s *Splitter) beginChunk(hdr, total int) error {
	s.inChunk, s.zdone = true, false
	s.zpos, s.zend, s.chunkLen = hdr, total, total
	s.zsrc.s = s
	if cap(s.out) < s.outWindow() {
		s.out = make([]byte, 0, s.outWindow())
	}
	s.out, s.outPos, s.outOff = s.out[:0], 0, 0
	if err := s.inf.reset(&s.zsrc, s.maxDecompressed()); err != nil {
		return s.fail("chunk", s.off, err)
	}
	return nil
}

// endChunk consumes the chunk whose packets have all been returned.
func (s *Splitter) endChunk() {
	s.inChunk = false
	s.start += s.chunkLen
	s.off += s.chunkLen
	// The last frame may still alias out: only the next chunk reuses it.
	s.out, s.outPos, s.outOff = s.out[:0], 0, 0
}

// nextInChunk cuts the next packet from the chunk in progress, which must
// hold whole ordinary packets only, decompressing more as needed. done
// reports that the chunk has ended cleanly and yielded all its packets.
func (s *Splitter) nextInChunk() (f Frame, done bool, err error) {
	for {
		c := s.out[s.outPos:]
		at := s.outOff + s.outPos
		if len(c) >= 2 {
			length := int(binary.BigEndian.Uint16(c))
			w := s.TypeWidth()
			switch {
			case length >= CompressionBorder:
				return Frame{}, false, s.fail("chunk packet length", at, ErrNestedChunk)
			case length < HeaderLen(w):
				return Frame{}, false, s.fail("chunk packet length", at, wire.ErrRange)
			case length > s.maxPacket():
				return Frame{}, false, s.fail("chunk packet length", at, wire.ErrTooLong)
			case len(c) >= length:
				f := cutFrame(c[:length:length], w)
				f.FromChunk = true
				s.outPos += length
				s.afterFrame(f)
				return f, false, nil
			}
		}
		if s.zdone {
			switch {
			case len(c) == 0:
				s.endChunk()
				return Frame{}, true, nil
			case len(c) < 2:
				return Frame{}, false, s.fail("chunk packet length", at, wire.ErrTruncated)
			}
			return Frame{}, false, s.fail("chunk packet", at, wire.ErrTruncated)
		}
		// Move the unread part, less than a packet, to the front and
		// decompress behind it. The window only needs to grow if MaxPacket
		// was raised during the chunk.
		if cap(s.out) < s.outWindow() {
			grown := make([]byte, len(s.out), s.outWindow())
			copy(grown, s.out)
			s.out = grown
		}
		m := copy(s.out[:cap(s.out)], c)
		s.outOff += s.outPos
		s.out, s.outPos = s.out[:m], 0
		n, err := s.inf.read(s.out[m:cap(s.out)])
		s.out = s.out[:m+n]
		switch {
		case err == io.EOF:
			if s.zpos != s.zend {
				return Frame{}, false, s.fail("chunk", s.off,
					fmt.Errorf("%w: %d bytes after the zlib stream", ErrCorruptChunk, s.zend-s.zpos))
			}
			s.zdone = true
		case err != nil:
			return Frame{}, false, s.fail("chunk", s.off, err)
		}
	}
}

func (s *Splitter) afterFrame(f Frame) {
	if s.SwitchOnJoin && s.TypeWidth() == 1 && f.Type == PacketServerJoinReply {
		var r JoinReply
		if r.Decode(f.Packet) == nil && r.YouCanJoin {
			s.typeWidth = 2
		}
	}
}

// fail records the sticky error of the stream.
func (s *Splitter) fail(field string, off int, err error) error {
	s.err = wire.NewDecodeError(field, off, err)
	return s.err
}

// cutFrame splits a whole packet, whose length the caller has checked is at
// least HeaderLen(w), into type and body.
func cutFrame(p []byte, w int) Frame {
	f := Frame{Packet: p}
	if w == 1 {
		f.Type = uint16(p[2])
	} else {
		f.Type = binary.BigEndian.Uint16(p[2:])
	}
	f.Body = p[2+w:]
	return f
}
