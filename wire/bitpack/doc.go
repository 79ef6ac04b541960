// Package bitpack reads and writes values that are not whole bytes wide: a
// value in [0,1000] costs 10 bits and a flag costs 1, instead of 16 and 8.
//
// # Layout
//
// Bits fill 32-bit words from the least significant bit upward: the first
// value written occupies the lowest bits of the first word, and a value that
// does not fit in what is left of a word continues in the low bits of the
// next. Each full word goes out as four little-endian bytes. The final,
// partial word goes out as only as many bytes as it needs, zero-padded to a
// byte boundary, so 37 bits take 5 bytes, not 8. Because the low bits of a
// little-endian word are its first bytes, a stream of any byte length reads
// back the same way: the reader loads whole words and zero-extends the last,
// short one from just the bytes that exist. Put another way, bit i of the
// stream is bit i%8 (counting from the least significant) of byte i/8; words
// are how the bits move, not part of the format. This is the word-at-a-time
// layout: [Writer] and [Reader] never touch memory a byte at a time on the
// hot path.
//
// # Safety contract
//
// The input of a [Reader] is written by whoever sent the packet, an attacker
// included, so:
//
//   - a read never goes past the end of the input, and never reads memory
//     beyond the slice to fill its last word;
//   - a bit width is not a range: [Reader.ReadInt] reads
//     [BitsRequired](min, max) bits and refuses a value above max with
//     [wire.ErrRange] (6 bits hold [0,32] but also 33..63);
//   - bad input is an error value, never a panic: a [*wire.DecodeError] whose
//     Offset is the BIT offset of the read that failed, wrapping
//     [wire.ErrTruncated], [wire.ErrRange] or [ErrWidth];
//   - errors are sticky: after the first failure every read returns 0 and the
//     same error, so a decoder may read a whole message and check
//     [Reader.Err] once, or check each read where a value sizes what follows.
//
// A [Writer] is just as strict with its caller: it never lets bits of a value
// above the requested width leak into the next field, and it refuses, rather
// than truncates, a value outside its declared range.
//
// Neither side allocates on the hot path: a Writer appends to a caller-owned
// slice and allocates only when that slice must grow; a Reader only reads its
// input. Building the one error a failed Reader records is the only
// allocation a Reader makes.
package bitpack
