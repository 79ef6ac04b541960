// Package wire holds the codecs of every protocol gamegate speaks, free of I/O.
//
// Every decoder in wire and its subpackages follows the same discipline, taken
// from the way game networking code reads packets an attacker wrote:
//
//   - a read never goes past the end of its input: each length is checked
//     against what remains before anything is sliced;
//   - every value that sizes or indexes anything is range-checked before use;
//   - bad input is an error value, never a panic: the common cases are sentinel
//     errors ([ErrTruncated], [ErrRange], …) and the detail is a [*DecodeError]
//     naming the field and its byte offset, usable with [errors.As];
//   - decoders parse into a caller-owned struct and may alias the input (each
//     says so); encoders append to a caller-owned slice and allocate nothing
//     when it has room.
//
// [Reader] is the bounds-checked byte reader the codecs share.
package wire

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Sentinel errors shared by the codecs. A [*DecodeError] wraps one of them.
var (
	// ErrTruncated reports input that ends before a field it must contain.
	ErrTruncated = errors.New("truncated")
	// ErrRange reports a field whose value is outside the range the format allows.
	ErrRange = errors.New("value out of range")
	// ErrTooLong reports input longer than the format allows.
	ErrTooLong = errors.New("too long")
	// ErrMagic reports a magic value or signature that does not match.
	ErrMagic = errors.New("bad magic")
)

// DecodeError says which field of a message could not be decoded and where.
type DecodeError struct {
	Field  string // the field being read, as the format names it
	Offset int    // byte offset of the field in the input
	Err    error  // the reason, usually one of the sentinel errors
}

func (e *DecodeError) Error() string {
	return e.Field + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Err.Error()
}

// Unwrap returns the reason, so errors.Is(err, ErrTruncated) works.
func (e *DecodeError) Unwrap() error { return e.Err }

// Errorf-free constructor used by the codecs on their (cold) error paths.
func newDecodeError(field string, off int, err error) *DecodeError {
	return &DecodeError{Field: field, Offset: off, Err: err}
}

// NewDecodeError returns a [*DecodeError] for field at byte offset off.
func NewDecodeError(field string, off int, err error) error {
	return newDecodeError(field, off, err)
}

// Reader reads fields from a byte slice without ever reading past its end.
//
// The first failed read records a [*DecodeError] and every later read returns
// zero values, so a decoder can read a whole message and check [Reader.Err]
// once, or check each read's result where a value sizes what follows.
// Byte slices returned by a Reader alias its input.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Reset makes r read b from its start and clears any error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err returns the first error the Reader met, or nil.
func (r *Reader) Err() error { return r.err }

// Offset is the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Len is the number of bytes left to read.
func (r *Reader) Len() int {
	if r.err != nil {
		return 0
	}
	return len(r.b) - r.off
}

// Rest returns the unread bytes (aliasing the input) and consumes them.
func (r *Reader) Rest() []byte {
	if r.err != nil {
		return nil
	}
	b := r.b[r.off:]
	r.off = len(r.b)
	return b
}

// Fail records err for field at the current offset, unless an error is
// already recorded, and returns the recorded error.
func (r *Reader) Fail(field string, err error) error {
	if r.err == nil {
		r.err = newDecodeError(field, r.off, err)
	}
	return r.err
}

func (r *Reader) need(field string, n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = newDecodeError(field, r.off, ErrTruncated)
		return false
	}
	return true
}

// U8 reads one byte.
func (r *Reader) U8(field string) uint8 {
	if !r.need(field, 1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

// U16BE reads a big-endian uint16.
func (r *Reader) U16BE(field string) uint16 {
	if !r.need(field, 2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

// U16LE reads a little-endian uint16.
func (r *Reader) U16LE(field string) uint16 {
	if !r.need(field, 2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

// U32BE reads a big-endian uint32.
func (r *Reader) U32BE(field string) uint32 {
	if !r.need(field, 4) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

// U32LE reads a little-endian uint32.
func (r *Reader) U32LE(field string) uint32 {
	if !r.need(field, 4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

// U64LE reads a little-endian uint64.
func (r *Reader) U64LE(field string) uint64 {
	if !r.need(field, 8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

// U64BE reads a big-endian uint64.
func (r *Reader) U64BE(field string) uint64 {
	if !r.need(field, 8) {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

// Bytes reads n bytes, aliasing the input. A negative n or one running past
// the end is an error.
func (r *Reader) Bytes(field string, n int) []byte {
	if !r.need(field, n) {
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

// Skip consumes n bytes.
func (r *Reader) Skip(field string, n int) {
	if r.need(field, n) {
		r.off += n
	}
}

// U8Range reads one byte and checks that it lies in [lo, hi].
func (r *Reader) U8Range(field string, lo, hi uint8) uint8 {
	start := r.off
	v := r.U8(field)
	if r.err == nil && (v < lo || v > hi) {
		r.err = newDecodeError(field, start, ErrRange)
		return 0
	}
	return v
}

// U16BERange reads a big-endian uint16 and checks that it lies in [lo, hi].
func (r *Reader) U16BERange(field string, lo, hi uint16) uint16 {
	start := r.off
	v := r.U16BE(field)
	if r.err == nil && (v < lo || v > hi) {
		r.err = newDecodeError(field, start, ErrRange)
		return 0
	}
	return v
}

// CString reads a NUL-terminated string and consumes its terminator. The
// string returned excludes the NUL and aliases the input; a string without a
// terminator is [ErrTruncated].
func (r *Reader) CString(field string) []byte {
	if r.err != nil {
		return nil
	}
	rest := r.b[r.off:]
	for i, c := range rest {
		if c == 0 {
			r.off += i + 1
			return rest[:i:i]
		}
	}
	r.err = newDecodeError(field, r.off, ErrTruncated)
	return nil
}
