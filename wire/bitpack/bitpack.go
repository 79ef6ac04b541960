package bitpack

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/gamegate/gamegate/wire"
)

// MaxBits is the widest value a single WriteBits or ReadBits call moves.
const MaxBits = 32

// ErrWidth reports a bit count outside [0, MaxBits] passed to WriteBits or
// ReadBits. It is a bug in the calling codec, not bad input, but it is still
// an error value: a packer must never panic or emit a stream it cannot read.
var ErrWidth = errors.New("bit count outside [0, 32]")

// Field names carried by the [*wire.DecodeError] a [Reader] records.
const (
	FieldBits    = "bits"    // ReadBits
	FieldBool    = "bool"    // ReadBool
	FieldInt     = "int"     // ReadInt
	FieldPadding = "padding" // AlignToByte
)

// BitsRequired returns the number of bits that hold every value of
// [min, max] once min is subtracted: 0 when min == max (the value is implied
// and costs nothing on the wire), otherwise the bit length of max-min, at
// most 64.
//
// An empty range (min > max) also yields 0. ReadInt and WriteInt refuse such
// a range with [wire.ErrRange], so the 0 never becomes a silent zero-width
// field.
func BitsRequired(min, max int64) int {
	if min >= max {
		return 0
	}
	// The unsigned difference is exact even when max-min overflows int64.
	return bits.Len64(uint64(max) - uint64(min))
}

// Writer packs values into a byte slice in the word-at-a-time layout.
//
// The zero Writer is ready to use and appends to a nil slice. Errors are
// sticky: the first failed write is recorded, every later write does nothing,
// and [Writer.Flush] reports the error instead of returning a stream with a
// field missing. Writer errors are the bare sentinels [ErrWidth] and
// [wire.ErrRange]; they carry no detail because the caller holds the value
// that was refused.
type Writer struct {
	buf         []byte
	start       int    // len(dst) at Reset; bytes before it belong to the caller
	scratch     uint64 // pending bits, the oldest in the lowest bits
	scratchBits int    // pending bit count, below 32 between calls
	err         error
}

// NewWriter returns a Writer that appends to dst.
func NewWriter(dst []byte) Writer { return Writer{buf: dst, start: len(dst)} }

// Reset makes w append to dst, keeping dst's contents, and clears any error.
// Writes allocate nothing while dst has spare capacity.
func (w *Writer) Reset(dst []byte) { *w = Writer{buf: dst, start: len(dst)} }

// Err returns the first error the Writer met, or nil.
func (w *Writer) Err() error { return w.err }

// BitsWritten is the number of bits written since Reset, counting the zero
// padding added by AlignToByte and Flush.
func (w *Writer) BitsWritten() int { return (len(w.buf)-w.start)*8 + w.scratchBits }

// WriteBits writes the low n bits of v, 0 <= n <= 32. Bits of v above n are
// ignored, so they can never spill into the next field. A width outside
// [0, 32] records [ErrWidth] and writes nothing.
func (w *Writer) WriteBits(v uint32, n int) {
	if w.err != nil {
		return
	}
	if uint(n) > MaxBits {
		w.err = ErrWidth
		return
	}
	w.put(v, n)
}

// WriteBool writes one bit: 1 for true.
func (w *Writer) WriteBool(v bool) {
	if w.err != nil {
		return
	}
	var b uint32
	if v {
		b = 1
	}
	w.put(b, 1)
}

// WriteInt writes v-min in BitsRequired(min, max) bits. A v outside
// [min, max], or an empty range, records and returns [wire.ErrRange] and
// writes nothing: a value that does not fit its declared range is refused,
// never truncated. After an earlier failure it returns that failure.
func (w *Writer) WriteInt(v, min, max int32) error {
	if w.err != nil {
		return w.err
	}
	if v < min || v > max {
		w.err = wire.ErrRange
		return w.err
	}
	// Modular subtraction gives v-min exactly, since v >= min.
	w.put(uint32(v)-uint32(min), BitsRequired(int64(min), int64(max)))
	return nil
}

// AlignToByte writes zero bits up to the next byte boundary, so that a reader
// calling [Reader.AlignToByte] at the same point accepts the padding.
func (w *Writer) AlignToByte() {
	if w.err != nil {
		return
	}
	w.put(0, -w.scratchBits&7)
}

// Flush pads the pending bits with zeros to a byte boundary, appends them as
// the fewest whole bytes (37 bits become 5 bytes, not 8) and returns the
// slice given to Reset with the stream appended.
//
// After a failed write it returns the slice given to Reset, unchanged, and
// the error. Writing may continue after Flush, byte-aligned; to mix in
// byte-oriented fields, append them to the returned slice and Reset the
// Writer with the result before writing bits again.
func (w *Writer) Flush() ([]byte, error) {
	if w.err != nil {
		return w.buf[:w.start], w.err
	}
	for ; w.scratchBits > 0; w.scratchBits -= 8 {
		w.buf = append(w.buf, byte(w.scratch))
		w.scratch >>= 8
	}
	w.scratch, w.scratchBits = 0, 0
	return w.buf, nil
}

// put appends the low n bits of v, 0 <= n <= 32, emitting a little-endian
// word whenever 32 bits are pending. scratchBits < 32 on entry, so the sum
// fits the 64-bit scratch.
func (w *Writer) put(v uint32, n int) {
	w.scratch |= (uint64(v) & (1<<uint(n) - 1)) << uint(w.scratchBits)
	w.scratchBits += n
	if w.scratchBits >= 32 {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(w.scratch))
		w.scratch >>= 32
		w.scratchBits -= 32
	}
}

// Reader unpacks values written by a [Writer] from a byte slice of any
// length; it only reads the slice, never past its end.
//
// The first failed read records a [*wire.DecodeError] whose Offset is the
// BIT offset of that read; from then on every read returns 0 and that error,
// and [Reader.BitsRead] stays at the failed read's offset.
type Reader struct {
	b           []byte
	next        int    // byte index of the next word to load
	scratch     uint64 // loaded, unread bits, the next one lowest
	scratchBits int    // loaded bit count; may run past totalBits at the end
	totalBits   int
	bitsRead    int
	err         error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b, totalBits: len(b) * 8} }

// Reset makes r read b from its start and clears any error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b, totalBits: len(b) * 8} }

// Err returns the first error the Reader met, or nil.
func (r *Reader) Err() error { return r.err }

// BitsRead is the number of bits consumed by successful reads.
func (r *Reader) BitsRead() int { return r.bitsRead }

// BitsRemaining is the number of bits left to read, 0 after a failure.
func (r *Reader) BitsRemaining() int {
	if r.err != nil {
		return 0
	}
	return r.totalBits - r.bitsRead
}

// BytePos is the index of the first input byte none of whose bits have been
// read. After AlignToByte it is where a byte-oriented decoder takes over.
func (r *Reader) BytePos() int { return (r.bitsRead + 7) / 8 }

// ReadBits reads an n-bit value, 0 <= n <= 32. Reading 0 bits returns 0 and
// consumes nothing. A width outside [0, 32] fails with [ErrWidth]; a read
// past the end fails with [wire.ErrTruncated].
func (r *Reader) ReadBits(n int) (uint32, error) {
	if r.err != nil {
		return 0, r.err
	}
	if uint(n) > MaxBits {
		return 0, r.fail(FieldBits, ErrWidth)
	}
	if n > r.totalBits-r.bitsRead {
		return 0, r.fail(FieldBits, wire.ErrTruncated)
	}
	return r.take(n), nil
}

// ReadBool reads one bit: true for 1.
func (r *Reader) ReadBool() (bool, error) {
	if r.err != nil {
		return false, r.err
	}
	if r.bitsRead >= r.totalBits {
		return false, r.fail(FieldBool, wire.ErrTruncated)
	}
	return r.take(1) == 1, nil
}

// ReadInt reads BitsRequired(min, max) bits and adds min. A result above max
// fails with [wire.ErrRange]: the bit width of a range that is not a power of
// two also fits values beyond it, and the sender chooses every bit. An empty
// range (min > max) always fails with [wire.ErrRange].
func (r *Reader) ReadInt(min, max int32) (int32, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := BitsRequired(int64(min), int64(max))
	if n > r.totalBits-r.bitsRead {
		return 0, r.fail(FieldInt, wire.ErrTruncated)
	}
	at := r.bitsRead
	v := int64(min) + int64(r.take(n))
	if v > int64(max) {
		r.bitsRead = at
		return 0, r.fail(FieldInt, wire.ErrRange)
	}
	return int32(v), nil
}

// AlignToByte skips to the next byte boundary. The skipped bits must be zero,
// as a [Writer] pads them, else it fails with [wire.ErrRange]: accepting any
// padding would let two different byte strings decode to one message.
func (r *Reader) AlignToByte() error {
	if r.err != nil {
		return r.err
	}
	pad := -r.bitsRead & 7
	if pad == 0 {
		return nil
	}
	// The padding exists: the input is whole bytes and bitsRead is not.
	at := r.bitsRead
	if r.take(pad) != 0 {
		r.bitsRead = at
		return r.fail(FieldPadding, wire.ErrRange)
	}
	return nil
}

// take consumes n bits, 0 <= n <= 32, that the caller has checked exist.
func (r *Reader) take(n int) uint32 {
	if r.scratchBits < n {
		r.load()
	}
	v := uint32(r.scratch & (1<<uint(n) - 1))
	r.scratch >>= uint(n)
	r.scratchBits -= n
	r.bitsRead += n
	return v
}

// load appends the next little-endian word to the scratch; the last, short
// word of an input whose length is not a multiple of 4 is zero-extended from
// the bytes that exist. It is called only when scratchBits < 32, so the word
// fits the 64-bit scratch.
func (r *Reader) load() {
	i := r.next
	r.next += 4
	var v uint32
	if len(r.b)-i >= 4 {
		v = binary.LittleEndian.Uint32(r.b[i:])
	} else {
		for k := 0; i+k < len(r.b); k++ {
			v |= uint32(r.b[i+k]) << (8 * k)
		}
	}
	r.scratch |= uint64(v) << uint(r.scratchBits)
	r.scratchBits += 32
}

// fail records err for field at the current bit offset; the caller has
// checked that no error is recorded yet.
func (r *Reader) fail(field string, err error) error {
	r.err = wire.NewDecodeError(field, r.bitsRead, err)
	return r.err
}
