// Package freeciv is the codec of Freeciv's TCP packet framing: the packet
// header, compressed and jumbo chunks, Freeciv's data types, delta-encoded
// packet bodies, the join packets of the initial protocol and the LAN
// server announcement. It does no I/O.
//
// # Framing
//
// A packet is a big-endian uint16 length, counting the whole packet, then
// the type, then the body. The type is one byte in the initial protocol and
// two bytes (big-endian) once a JOIN_REPLY with you_can_join set has passed;
// both directions switch at that point, and the JOIN_REPLY itself still has
// the 1-byte type. An ordinary packet is at most [MaxLenPacket] bytes.
//
// A length field of [CompressionBorder] (16385) or more marks a compressed
// chunk, which has no type: its size, length field included, is the field
// minus 16385, and the bytes after the length field are one zlib (RFC 1950)
// stream. A chunk whose size would not fit that field is a jumbo: the field
// holds [JumboSize] and a uint32 follows with the jumbo's size, both length
// fields included. A sender uses a jumbo when 2 + compressed size reaches
// [JumboBorder]. Decompressed, a chunk is ordinary packets back to back,
// read as if they had arrived in place of the chunk.
//
// # The header-width switch
//
// The type width changes after one packet, the accepting JOIN_REPLY, which
// may sit anywhere in a TCP read or in a decompressed chunk, and the packets
// behind it use the new width. [Splitter] therefore reads each header only
// when [Splitter.Next] reaches it, and [Splitter.SetTypeWidth] takes effect
// at the next header, so the caller switches between the two calls of Next
// that return the JOIN_REPLY and the packet after it. With
// [Splitter.SwitchOnJoin] set, the splitter does this itself.
//
// # Limits
//
// Every size the stream declares is checked before anything is buffered or
// allocated for it: an ordinary packet against [Splitter.MaxPacket] (default
// 4096), a chunk or jumbo against [Splitter.MaxChunk] (default 1 MiB, framing
// included). The splitter never holds more raw bytes than the larger of the
// two, the largest frame it accepts. A chunk is decompressed a window at a
// time (MaxPacket plus 16 KiB) as its packets are asked for, so its output
// is never held whole, and decompression stops with
// [ErrDecompressedTooLarge] as soon as a chunk's output passes
// [Splitter.MaxDecompressed] (default 1 MiB), without inflating the rest.
// Freeciv21 instead gives up when the output passes about 400 times the
// input; a ratio bound lets a 1 MiB chunk claim 400 MiB, so this package
// bounds the output absolutely. A compressed chunk inside decompressed data
// is refused with [ErrNestedChunk], as Freeciv21 refuses it: it would let a
// bomb multiply. A Debian Freeciv 3.0.6 server answers a join with a jumbo
// of about 200 KB, 260 KB decompressed: well inside the defaults.
//
// # Delta encoding
//
// A packet kind with delta enabled is encoded against the receiver's last
// packet of the same kind with the same key fields. [PacketSpec] describes a packet
// kind once; [PacketSpec.Encode] and [PacketSpec.Decode] move values in the
// generic form [Value]. The body is a bit vector with one bit per non-key
// field (bit i in byte i/8 under 1<<(i%8), read and written with
// wire/bitpack), the key fields, then the changed fields in order. A
// non-key BOOL is folded: its bit is its value and no byte follows. A
// changed array-diff field is a list of (uint8 index, element) pairs ended
// by index 255. Decode fills the fields the body leaves out from the
// previous packet, or with zero values when there is none.
//
// # Where the sources are silent
//
// These choices are this package's own; each leans towards refusing what an
// honest Freeciv peer never sends, since a gateway must not pass on what it
// cannot describe:
//
//   - A chunk with no compressed bytes (length field 16385 to 16387 or a
//     jumbo size of 6 or less) is refused with [wire.ErrRange].
//   - A jumbo small enough for an ordinary chunk is accepted: a receiver
//     goes by the length field.
//   - Compressed bytes must be exactly one zlib stream: bytes after its end
//     are refused with [ErrCorruptChunk].
//   - A decompressed chunk must end on a packet boundary. A receiver that
//     splices the output into its stream would join a trailing partial
//     packet with the bytes after the chunk; a sender compresses whole
//     packets, so this package refuses it.
//   - A chunk that decompresses to nothing is accepted and yields nothing.
//   - A chunk's packets are returned as it is decompressed, so those before
//     a fault in it (corrupt data, the size limit, a malformed packet) come
//     out before the error; Freeciv decompresses a chunk whole first. The
//     stream is dead after the error either way, and memory stays at one
//     window instead of the whole output.
//   - The uint8/uint16 switch and the MaxPacket bound apply inside chunks as
//     in the stream.
//   - Framing errors are sticky: after one the stream cannot be
//     resynchronised.
//   - A STRING with no NUL within its field's size is refused
//     ([wire.ErrTooLong]) rather than truncated; a BOOL byte other than 0 or
//     1 is refused ([wire.ErrRange]).
//   - The join packets are read as the plain field sequences of the layouts
//     (no bit vector), as packets of the initial protocol are: a delta
//     encoding would rest on capabilities the join has yet to agree. The
//     length field must equal the packet's size and the fields must fill it
//     exactly; a longer packet is refused.
//   - Delta bodies: padding bits after the last field's bit must be zero,
//     array-diff indices must increase strictly (as a sender scanning the
//     array writes them), an array-diff with only the terminator is
//     accepted, and bytes after the last field are refused. Key fields are
//     never folded, BOOL keys included: they are not in the bit vector.
//     Only fixed-length arrays are described.
//   - The LAN announcement's strings have no bound of their own; the
//     datagram is at most [MaxLANAnnouncement] bytes and nothing may follow
//     the last string.
//   - [Compressor.AppendChunk] makes an ordinary chunk whenever its length
//     field can say so (2 + compressed size below JumboBorder) and leaves
//     the choice of sending uncompressed packets to the caller.
package freeciv
