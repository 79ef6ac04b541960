// Package battlefield is the codec of the Frostbite remote administration
// protocol's packets (Battlefield: Bad Company 2, 3, 4, Hardline, Medal of
// Honor 2010 and Warfighter, the servers GameDig reads with its
// battlefield protocol), free of I/O.
//
// Every packet, request or answer, is
//
//	sequence(u32) size(u32) words(u32) (length(u32) bytes NUL)*
//
// all little-endian: size counts the whole packet, header included, and
// each word is length bytes followed by a NUL the length does not count.
// The sequence's bit 31 is set in packets the server originates (events)
// and bit 30 in answers; its low 30 bits number the request. An answer's
// first word is its status ("OK" on success).
package battlefield

import (
	"bytes"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what a decoder accepts and keeps. The protocol's own
// documentation caps a packet at 16384 bytes; servers with many players
// are seen to send more, so the limit of a reader is its caller's
// (max_response_size), and MaxPacket only bounds what any caller may ask.
const (
	// HeaderLen is the sequence, size and word count.
	HeaderLen = 12
	// PrefixLen is what Size needs: the sequence and the size.
	PrefixLen = 8
	// MaxPacket is the largest packet any reader accepts.
	MaxPacket = 1 << 20
	// MaxWords bounds the words of a packet (five bytes each at least).
	MaxWords = 16384
)

// Sequence flags.
const (
	FlagFromServer = 1 << 31
	FlagResponse   = 1 << 30
	SequenceMask   = FlagResponse - 1
)

// ErrSize reports a size field outside 12 to the reader's limit.
var ErrSize = errors.New("packet size out of range")

// Packet is one packet. Words alias the input of Decode.
type Packet struct {
	// Sequence is the request number, 0 to SequenceMask.
	Sequence   uint32
	FromServer bool
	Response   bool
	Words      [][]byte
}

// Size reads the size field of the packet prefix begins with and checks
// it against HeaderLen and limit (at most MaxPacket): how many bytes the
// whole packet takes. It is the check a stream reader makes before it
// reads, or sizes anything for, the rest of a packet.
func Size(prefix []byte, limit int) (int, error) {
	r := wire.NewReader(prefix)
	r.U32LE("sequence")
	size := r.U32LE("size")
	if err := r.Err(); err != nil {
		return 0, err
	}
	if limit > MaxPacket || limit <= 0 {
		limit = MaxPacket
	}
	if size < HeaderLen || uint64(size) > uint64(limit) {
		return 0, wire.NewDecodeError("size", 4, ErrSize)
	}
	return int(size), nil
}

// Decode parses one whole packet, reusing p.Words; the words alias b.
// Bytes past the size the packet gives are an error: a stream reader
// hands it exactly one packet.
func (p *Packet) Decode(b []byte) error {
	p.Words = p.Words[:0]
	size, err := Size(b, MaxPacket)
	if err != nil {
		return err
	}
	r := wire.NewReader(b)
	seq := r.U32LE("sequence")
	r.U32LE("size")
	n := r.U32LE("words")
	if err := r.Err(); err != nil {
		return err
	}
	if size != len(b) {
		if size > len(b) {
			return wire.NewDecodeError("size", 4, wire.ErrTruncated)
		}
		return wire.NewDecodeError("size", 4, wire.ErrTooLong)
	}
	// A word takes five bytes at least, so a count past what remains is
	// refused before anything is kept.
	if n > MaxWords || uint64(n)*5 > uint64(r.Len()) {
		return wire.NewDecodeError("words", 8, wire.ErrRange)
	}
	p.Sequence, p.FromServer, p.Response = seq&SequenceMask, seq&FlagFromServer != 0, seq&FlagResponse != 0
	for range n {
		l := r.U32LE("word length")
		if r.Err() == nil && uint64(l) >= uint64(r.Len()) {
			return r.Fail("word", wire.ErrTruncated)
		}
		w := r.Bytes("word", int(l))
		off := r.Offset()
		if i := bytes.IndexByte(w, 0); i >= 0 {
			return wire.NewDecodeError("word", off-len(w)+i, wire.ErrRange)
		}
		if nul := r.U8("word terminator"); r.Err() == nil && nul != 0 {
			return wire.NewDecodeError("word terminator", off, wire.ErrMagic)
		}
		if err := r.Err(); err != nil {
			return err
		}
		p.Words = append(p.Words, w)
	}
	if r.Len() != 0 {
		return r.Fail("words", wire.ErrTooLong)
	}
	return nil
}

// Len is the encoded size of p.
func (p *Packet) Len() int {
	n := HeaderLen
	for _, w := range p.Words {
		n += 5 + len(w)
	}
	return n
}

// AppendTo appends p's encoding to b. A packet past MaxPacket or
// MaxWords, a word with a NUL or a sequence past SequenceMask is an error.
func (p *Packet) AppendTo(b []byte) ([]byte, error) {
	size := p.Len()
	if size > MaxPacket || len(p.Words) > MaxWords {
		return b, wire.ErrTooLong
	}
	if p.Sequence > SequenceMask {
		return b, wire.ErrRange
	}
	for _, w := range p.Words {
		if bytes.IndexByte(w, 0) >= 0 {
			return b, wire.ErrRange
		}
	}
	seq := p.Sequence
	if p.FromServer {
		seq |= FlagFromServer
	}
	if p.Response {
		seq |= FlagResponse
	}
	b = appendU32(b, seq)
	b = appendU32(b, uint32(size))
	b = appendU32(b, uint32(len(p.Words)))
	for _, w := range p.Words {
		b = appendU32(b, uint32(len(w)))
		b = append(append(b, w...), 0)
	}
	return b, nil
}

// AppendRequest appends the request packet of sequence seq with words.
func AppendRequest(b []byte, seq uint32, words ...string) ([]byte, error) {
	p := Packet{Sequence: seq, Words: make([][]byte, len(words))}
	for i, w := range words {
		p.Words[i] = []byte(w)
	}
	return p.AppendTo(b)
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
