// Package a2s encodes and decodes Valve's server queries (A2S), spoken by
// Source and GoldSrc game servers over UDP, little-endian throughout.
//
// The source is the Valve developer wiki's "Server queries" page; the
// layouts below are its tables, and the test vectors in testdata are built
// from them field by field.
//
// # Messages
//
// A message starts with the int32 -1 (FF FF FF FF) and a type byte:
//
//	T "Source Engine Query\0" [int32 challenge]   A2S_INFO request
//	U int32 challenge                             A2S_PLAYER request (-1 asks for a challenge)
//	V int32 challenge                             A2S_RULES request (-1 asks for a challenge)
//	A int32 challenge                             S2C_CHALLENGE: resend with this challenge
//	I ...                                         A2S_INFO answer (Source)
//	m ...                                         A2S_INFO answer (obsolete GoldSrc)
//	D byte count, players                         A2S_PLAYER answer
//	E int16 count, name/value pairs               A2S_RULES answer
//
// Strings are NUL-terminated. A message too long for one datagram is sent
// split (int32 -2 and a split header, see [SplitHeader] and [Reassembler]);
// a Source server may compress it with bzip2 first.
//
// # Decisions
//
//   - Decoders parse a whole message, header included, as it arrives in one
//     datagram or as [Reassembler.Message] returns it. They alias the input
//     and reuse the slices of the struct they fill, so a struct decoded into
//     again allocates nothing once its slices are large enough.
//   - Bytes after a complete answer are ignored: some games append fields of
//     their own (The Ship's player fields, Rust's larger rules).
//   - Encoders refuse what cannot be encoded (a NUL inside a string, more
//     players than a byte counts) with [wire.ErrRange].
package a2s
