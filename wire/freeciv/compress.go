package freeciv

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// inflater decompresses chunks, keeping its zlib state between them so that
// a long stream does not rebuild it per chunk.
type inflater struct {
	zr io.ReadCloser
	lr io.LimitedReader
}

// reset starts decompressing one zlib stream from src, which must be an
// io.ByteReader (a flate.Reader) so that zlib reads no byte past the
// stream's end, with an output limit. The stream's header is read here.
func (f *inflater) reset(src flate.Reader, limit int) error {
	var err error
	if f.zr == nil {
		f.zr, err = zlib.NewReader(src)
	} else {
		err = f.zr.(zlib.Resetter).Reset(src, nil)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptChunk, err)
	}
	// Reading limit+1 bytes, not limit, tells a stream that ends exactly at
	// the limit from one that goes on.
	f.lr = io.LimitedReader{R: f.zr, N: int64(limit) + 1}
	return nil
}

// read decompresses into p. It returns io.EOF once the stream has ended and
// its checksum matched, [ErrDecompressedTooLarge] as soon as the output
// passes the limit, whatever the stream would still expand to, and an error
// wrapping [ErrCorruptChunk] for anything zlib refuses.
func (f *inflater) read(p []byte) (int, error) {
	n, err := f.lr.Read(p)
	switch {
	case f.lr.N == 0:
		return n, ErrDecompressedTooLarge
	case err == nil || err == io.EOF:
		return n, err
	}
	return n, fmt.Errorf("%w: %w", ErrCorruptChunk, err)
}

// Decompress appends to dst[:0] the decompression of src, the compressed
// bytes of a chunk (after its 2- or 6-byte framing), which must be exactly
// one zlib (RFC 1950) stream: anything else, bytes after the stream
// included, fails with [ErrCorruptChunk]. Once the output passes limit
// bytes it fails with [ErrDecompressedTooLarge] without decompressing
// further. A limit of zero or less means [DefaultMaxDecompressed].
//
// [Splitter] decompresses chunks itself, a window at a time; Decompress is
// for callers that hold a chunk's bytes and want them whole. Its output
// buffer grows from a guess of four times the input.
func Decompress(dst, src []byte, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxDecompressed
	}
	var f inflater
	r := bytes.NewReader(src)
	if err := f.reset(r, limit); err != nil {
		return dst[:0], err
	}
	dst = dst[:0]
	for {
		if len(dst) == cap(dst) {
			// len(dst) <= limit here, so the new capacity exceeds the old.
			grown := make([]byte, len(dst), min(max(2*cap(dst), 4*len(src), 4096), limit+1))
			copy(grown, dst)
			dst = grown
		}
		n, err := f.read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return dst[:0], err
		}
	}
	if r.Len() != 0 {
		return dst[:0], fmt.Errorf("%w: %d bytes after the zlib stream", ErrCorruptChunk, r.Len())
	}
	return dst, nil
}

// sliceWriter is the io.Writer a zlib.Writer compresses into: it appends to
// a caller's slice, so compression writes straight into the output.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Compressor builds compressed chunks, reusing one zlib writer: building the
// writer costs several hundred kilobytes, resetting it nothing.
type Compressor struct {
	zw *zlib.Writer
	w  sliceWriter
}

// NewCompressor returns a Compressor of the given zlib level
// (zlib.DefaultCompression, zlib.HuffmanOnly, or 0 to 9).
func NewCompressor(level int) (*Compressor, error) {
	c := new(Compressor)
	zw, err := zlib.NewWriterLevel(&c.w, level)
	if err != nil {
		return nil, err
	}
	c.zw = zw
	return c, nil
}

var errChunkTooLong = errors.New("freeciv: compressed chunk longer than a jumbo length field holds")

// AppendChunk compresses packets, which should be whole ordinary packets
// back to back (this is not checked), into one chunk appended to dst: an
// ordinary chunk (length field 2 + compressed size + CompressionBorder) when
// its 2 + compressed size is below JumboBorder, else a jumbo (JumboSize,
// then the uint32 total 6 + compressed size). It does not fall back to
// sending the packets uncompressed: when the chunk is not shorter than
// packets, the caller should send packets as they are, as Freeciv's sender
// does. On error dst is returned unchanged.
func (c *Compressor) AppendChunk(dst, packets []byte) ([]byte, error) {
	start := len(dst)
	c.w.b = append(dst, 0, 0) // room for an ordinary chunk's length field
	c.zw.Reset(&c.w)
	_, err := c.zw.Write(packets)
	if err == nil {
		err = c.zw.Close()
	}
	out := c.w.b
	c.w.b = nil
	if err != nil {
		return dst, err
	}
	size := len(out) - start - chunkHeaderLen
	if chunkHeaderLen+size < JumboBorder {
		binary.BigEndian.PutUint16(out[start:], uint16(chunkHeaderLen+size+CompressionBorder))
		return out, nil
	}
	if uint64(jumboHeaderLen+size) > math.MaxUint32 {
		return dst, errChunkTooLong
	}
	out = append(out, 0, 0, 0, 0)
	copy(out[start+jumboHeaderLen:], out[start+chunkHeaderLen:start+chunkHeaderLen+size])
	binary.BigEndian.PutUint16(out[start:], JumboSize)
	binary.BigEndian.PutUint32(out[start+2:], uint32(jumboHeaderLen+size))
	return out, nil
}

// AppendCompressedChunk is [Compressor.AppendChunk] with a Compressor of the
// given level built for this one call.
func AppendCompressedChunk(dst, packets []byte, level int) ([]byte, error) {
	c, err := NewCompressor(level)
	if err != nil {
		return dst, err
	}
	return c.AppendChunk(dst, packets)
}
