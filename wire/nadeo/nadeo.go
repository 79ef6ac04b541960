// Package nadeo is the codec of GbxRemote, the XML-RPC transport of
// Nadeo's dedicated servers (TrackMania, ShootMania, ManiaPlanet: the
// servers GameDig reads with its nadeo protocol), free of I/O.
//
// On connection the server sends its handshake: a length (u32) and
// "GBXRemote 2". Every message after it, either way, is
//
//	size(u32) handle(u32) XML
//
// little-endian, size counting the XML alone. A client numbers its calls
// with handles from 0x80000001 up; an answer carries its call's handle;
// messages with a handle below 0x80000000 are callbacks the server sends
// on its own. The XML is an XML-RPC methodCall or methodResponse.
package nadeo

import (
	"encoding/binary"
	"errors"

	"github.com/gamegate/gamegate/wire"
)

// Limits that bound what a decoder accepts.
const (
	// MaxHandshake bounds the handshake's text ("GBXRemote 2").
	MaxHandshake = 64
	// HeaderLen is a message's size and handle.
	HeaderLen = 8
	// MaxMessage is the largest message any reader accepts: GbxRemote's
	// own limit on a call, 1 MiB.
	MaxMessage = 1 << 20
	// FirstHandle is a client's first call's handle.
	FirstHandle = 0x80000001
	// Version2 is the handshake of the protocol this codec speaks.
	Version2 = "GBXRemote 2"
)

// Errors of a stream that is not GbxRemote 2.
var (
	// ErrVersion is a handshake other than Version2 (GbxRemote 1 has no
	// handles and is not spoken).
	ErrVersion = errors.New("not a GBXRemote 2 handshake")
	// ErrSize is a size field past the reader's limit.
	ErrSize = errors.New("message size out of range")
)

// HandshakeLen reads the length prefix of a handshake and checks it
// against MaxHandshake: how many bytes of text follow.
func HandshakeLen(prefix []byte) (int, error) {
	r := wire.NewReader(prefix)
	n := r.U32LE("handshake length")
	if err := r.Err(); err != nil {
		return 0, err
	}
	if n == 0 || n > MaxHandshake {
		return 0, wire.NewDecodeError("handshake length", 0, wire.ErrRange)
	}
	return int(n), nil
}

// CheckHandshake checks a whole handshake: its length and its text.
func CheckHandshake(b []byte) error {
	n, err := HandshakeLen(b)
	if err != nil {
		return err
	}
	if len(b)-4 != n {
		return wire.NewDecodeError("handshake", 4, wire.ErrTruncated)
	}
	if string(b[4:]) != Version2 {
		return wire.NewDecodeError("handshake", 4, ErrVersion)
	}
	return nil
}

// AppendHandshake appends the server's handshake.
func AppendHandshake(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(Version2)))
	return append(b, Version2...)
}

// Header reads a message's header: the size of its XML, checked against
// limit (at most MaxMessage), and its handle. It is the check a stream
// reader makes before it reads, or sizes anything for, the XML.
func Header(b []byte, limit int) (size int, handle uint32, err error) {
	r := wire.NewReader(b)
	n := r.U32LE("size")
	handle = r.U32LE("handle")
	if err := r.Err(); err != nil {
		return 0, 0, err
	}
	if limit <= 0 || limit > MaxMessage {
		limit = MaxMessage
	}
	if uint64(n) > uint64(limit) {
		return 0, 0, wire.NewDecodeError("size", 0, ErrSize)
	}
	return int(n), handle, nil
}

// AppendMessage appends a message of xml with handle.
func AppendMessage(b []byte, handle uint32, xml []byte) ([]byte, error) {
	if len(xml) > MaxMessage {
		return b, wire.ErrTooLong
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(xml)))
	b = binary.LittleEndian.AppendUint32(b, handle)
	return append(b, xml...), nil
}

// IsAnswer reports whether handle is a call's (answers carry their
// call's); below it are the server's callbacks.
func IsAnswer(handle uint32) bool { return handle >= FirstHandle }
