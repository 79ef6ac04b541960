// Package mumbleping is the codec of Mumble's UDP ping, free of I/O: the
// 12-byte ping a client sends a Murmur (mumble-server) before it connects,
// and the 24-byte pong that tells it the server's version, users online,
// user limit and allowed bandwidth.
//
// Layout (big-endian), as Mumble's client and server exchange it:
//
//	ping: uint32 0 | uint64 ident
//	pong: uint32 version (major<<16 | minor<<8 | patch) | uint64 ident (echoed)
//	      | uint32 users | uint32 max users | uint32 allowed bandwidth (bit/s)
package mumbleping

import (
	"encoding/binary"

	"github.com/gamegate/gamegate/wire"
)

// Sizes and the default port.
const (
	// PingLen is the length of a ping.
	PingLen = 12
	// PongLen is the length of a pong.
	PongLen = 24
	// DefaultPort is Murmur's default port (TCP for clients, UDP for
	// pings and voice).
	DefaultPort = 64738
)

// Ping is a client's ping: a request for a Pong echoing Ident.
type Ping struct {
	// Ident is echoed by the server; a client matches pongs to its ping
	// by it.
	Ident uint64
}

// Len returns PingLen.
func (p *Ping) Len() int { return PingLen }

// AppendTo appends the ping to b.
func (p *Ping) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint64(b, p.Ident), nil
}

// Decode parses a ping: exactly PingLen bytes, starting with a zero word.
func (p *Ping) Decode(b []byte) error {
	*p = Ping{}
	if err := exact("ping", b, PingLen); err != nil {
		return err
	}
	if binary.BigEndian.Uint32(b) != 0 {
		return wire.NewDecodeError("request type", 0, wire.ErrMagic)
	}
	p.Ident = binary.BigEndian.Uint64(b[4:])
	return nil
}

// Pong is a server's answer to a Ping.
type Pong struct {
	// Version is major<<16 | minor<<8 | patch (Major, Minor and Patch
	// split it).
	Version uint32
	// Ident is the ping's, echoed.
	Ident uint64
	// Users is the number of users connected.
	Users uint32
	// MaxUsers is the server's user limit (Murmur's users setting).
	MaxUsers uint32
	// Bandwidth is the bandwidth a client may use, in bits per second.
	Bandwidth uint32
}

// Major returns the version's major number.
func (p *Pong) Major() uint16 { return uint16(p.Version >> 16) }

// Minor returns the version's minor number.
func (p *Pong) Minor() uint8 { return uint8(p.Version >> 8) }

// Patch returns the version's patch number.
func (p *Pong) Patch() uint8 { return uint8(p.Version) }

// Len returns PongLen.
func (p *Pong) Len() int { return PongLen }

// AppendTo appends the pong to b.
func (p *Pong) AppendTo(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, p.Version)
	b = binary.BigEndian.AppendUint64(b, p.Ident)
	b = binary.BigEndian.AppendUint32(b, p.Users)
	b = binary.BigEndian.AppendUint32(b, p.MaxUsers)
	return binary.BigEndian.AppendUint32(b, p.Bandwidth), nil
}

// Decode parses a pong: exactly PongLen bytes.
func (p *Pong) Decode(b []byte) error {
	*p = Pong{}
	if err := exact("pong", b, PongLen); err != nil {
		return err
	}
	p.Version = binary.BigEndian.Uint32(b)
	p.Ident = binary.BigEndian.Uint64(b[4:])
	p.Users = binary.BigEndian.Uint32(b[12:])
	p.MaxUsers = binary.BigEndian.Uint32(b[16:])
	p.Bandwidth = binary.BigEndian.Uint32(b[20:])
	return nil
}

// PongIdent returns the ident a pong echoes, when b is as long as a pong;
// a client matches pongs to its ping by it before decoding them.
func PongIdent(b []byte) (uint64, bool) {
	if len(b) != PongLen {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[4:]), true
}

// exact checks that b is n bytes long.
func exact(field string, b []byte, n int) error {
	switch {
	case len(b) < n:
		return wire.NewDecodeError(field, len(b), wire.ErrTruncated)
	case len(b) > n:
		return wire.NewDecodeError(field, n, wire.ErrTooLong)
	}
	return nil
}
