package relay

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/gamegate/gamegate/wire"
)

// Protocol constants.
const (
	// Signature is the first two bytes of every message, 0xDA then 0x72.
	Signature uint16 = 0xDA72
	// Version is the only protocol version defined.
	Version uint8 = 0
	// HeaderLen is the size of the header every message starts with.
	HeaderLen = 4

	// KeySize is the size of an allocation key, the HMAC key of a BIND. The
	// shipped client refuses keys of any other size, and so does [Verify].
	KeySize = 64
	// HMACSize is the size of a BIND's HMAC-SHA256.
	HMACSize = 32
	// MaxConnectionData is the largest connection data a BIND or
	// CONNECT_REQUEST carries: its length is one byte.
	MaxConnectionData = 255
	// DefaultMaxRelayContent is the largest RELAY content a relay forwards
	// unless configured otherwise. The codec itself allows up to 65535 bytes.
	DefaultMaxRelayContent = 1400

	// ShippedBindLen is the size of every BIND the shipped client sends: the
	// padded layout, with 255 bytes of connection data.
	ShippedBindLen = bindFixedLen + MaxConnectionData
	// ShippedSignedLen is how many bytes of a padded BIND its HMAC covers.
	ShippedSignedLen = ShippedBindLen - HMACSize
)

// Message sizes and field offsets.
const (
	sig0 = byte(Signature >> 8)
	sig1 = byte(Signature & 0xFF)

	idLen = 16

	// BIND: header, accept mode, nonce, L, data [L], HMAC.
	bindNonceOff    = HeaderLen + 1
	bindDataLenOff  = bindNonceOff + 2
	bindDataOff     = bindDataLenOff + 1
	bindFixedLen    = bindDataOff + HMACSize
	bindReceivedLen = HeaderLen

	// PING, CONNECT_REQUEST, CLOSE, ERROR: header, allocation ID, ...
	idOff       = HeaderLen
	idEnd       = idOff + idLen
	pingLen     = idEnd + 2
	closeLen    = idEnd
	errorLen    = idEnd + 1
	connLenOff  = idEnd
	connDataOff = connLenOff + 1

	// ACCEPTED, REJECTED, DISCONNECT, RELAY: header, from, to, ...
	fromOff       = HeaderLen
	toOff         = fromOff + idLen
	pairLen       = toOff + idLen
	relayLenOff   = pairLen
	relayDataOff  = relayLenOff + 2
	maxRelayField = 1<<16 - 1
)

// Type is a message type, the header's fourth byte.
type Type uint8

// Message types. Types 4, 5 and 7 are reserved.
const (
	TypeBind           Type = 0
	TypeBindReceived   Type = 1
	TypePing           Type = 2
	TypeConnectRequest Type = 3
	TypeAccepted       Type = 6
	TypeRejected       Type = 8 // the host is at its maximum number of connections
	TypeDisconnect     Type = 9
	TypeRelay          Type = 10
	TypeClose          Type = 11
	TypeError          Type = 12
)

var typeNames = [...]string{
	TypeBind:           "BIND",
	TypeBindReceived:   "BIND_RECEIVED",
	TypePing:           "PING",
	TypeConnectRequest: "CONNECT_REQUEST",
	TypeAccepted:       "ACCEPTED",
	TypeRejected:       "REJECTED",
	TypeDisconnect:     "DISCONNECT",
	TypeRelay:          "RELAY",
	TypeClose:          "CLOSE",
	TypeError:          "ERROR",
}

// Known reports whether t is a message type this package decodes.
func (t Type) Known() bool { return int(t) < len(typeNames) && typeNames[t] != "" }

// String returns the protocol's name for t, such as "CONNECT_REQUEST".
func (t Type) String() string {
	if t.Known() {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// AcceptMode is how the relay treats requests to connect to a BIND's sender.
type AcceptMode uint8

// AcceptModeAuto accepts every connection while the host has room: the only
// mode relays implement.
const AcceptModeAuto AcceptMode = 0

// ErrorCode is the reason an ERROR message gives.
type ErrorCode uint8

// Error codes.
const (
	CodeInvalidProtocolVersion ErrorCode = 0 // the message's version is not 0
	CodeTimeout                ErrorCode = 1 // the binding expired for inactivity
	CodeUnauthorized           ErrorCode = 2 // the client may not do this
	CodeClientPlayerMismatch   ErrorCode = 3 // the sender's address is not bound to the allocation
	CodeAllocationNotFound     ErrorCode = 4 // no such allocation
	CodeNotConnected           ErrorCode = 5 // the two allocations are not connected
	CodeSelfConnectNotAllowed  ErrorCode = 6 // a CONNECT_REQUEST to the sender's own allocation
)

var codeNames = [...]string{
	CodeInvalidProtocolVersion: "InvalidProtocolVersion",
	CodeTimeout:                "Timeout",
	CodeUnauthorized:           "Unauthorized",
	CodeClientPlayerMismatch:   "ClientPlayerMismatch",
	CodeAllocationNotFound:     "AllocationNotFound",
	CodeNotConnected:           "NotConnected",
	CodeSelfConnectNotAllowed:  "SelfConnectNotAllowed",
}

// String returns the code's name, such as "NotConnected".
func (c ErrorCode) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "ErrorCode(" + strconv.Itoa(int(c)) + ")"
}

// AllocationID identifies an allocation: the 16 bytes of its UUID in RFC 4122
// order, so the UUID's text form reads the bytes left to right.
type AllocationID [16]byte

// String returns the UUID's canonical text form,
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (id AllocationID) String() string {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:])
	return string(s[:])
}

// Errors returned by this package, beyond the wire sentinels its decode
// errors wrap.
var (
	// ErrVersion reports a message whose version is not 0: a relay answers it
	// with an ERROR of code [CodeInvalidProtocolVersion].
	ErrVersion = errors.New("unsupported protocol version")
	// ErrType reports an unknown or reserved message type, or a message of
	// another type than the decoder's.
	ErrType = errors.New("unexpected message type")
	// ErrTrailing reports bytes after the end of a message.
	ErrTrailing = errors.New("trailing bytes")
	// ErrKeySize reports an allocation key that is not [KeySize] bytes.
	ErrKeySize = errors.New("relay: allocation key is not 64 bytes")
	// ErrHMAC reports a BIND whose HMAC does not match its content and key.
	ErrHMAC = errors.New("relay: BIND HMAC does not match")
)

// The errors at fixed offsets are fixed values, so that neither the hot paths
// (PING, RELAY) nor a flood of malformed datagrams allocate.
var (
	errHeaderShort = &wire.DecodeError{Field: "header", Offset: 0, Err: wire.ErrTruncated}
	errSignature   = &wire.DecodeError{Field: "signature", Offset: 0, Err: wire.ErrMagic}
	errVersion     = &wire.DecodeError{Field: "version", Offset: 2, Err: ErrVersion}
	errType        = &wire.DecodeError{Field: "type", Offset: 3, Err: ErrType}

	errIDShort   = &wire.DecodeError{Field: "allocation id", Offset: idOff, Err: wire.ErrTruncated}
	errFromShort = &wire.DecodeError{Field: "from", Offset: fromOff, Err: wire.ErrTruncated}
	errToShort   = &wire.DecodeError{Field: "to", Offset: toOff, Err: wire.ErrTruncated}

	errAcceptModeShort = &wire.DecodeError{Field: "accept mode", Offset: HeaderLen, Err: wire.ErrTruncated}
	errNonceShort      = &wire.DecodeError{Field: "nonce", Offset: bindNonceOff, Err: wire.ErrTruncated}
	errBindDataLen     = &wire.DecodeError{Field: "connection data length", Offset: bindDataLenOff, Err: wire.ErrTruncated}
	errBindData        = &wire.DecodeError{Field: "connection data", Offset: bindDataOff, Err: wire.ErrTruncated}

	errPingNumberShort = &wire.DecodeError{Field: "number", Offset: idEnd, Err: wire.ErrTruncated}
	errConnDataLen     = &wire.DecodeError{Field: "to connection data length", Offset: connLenOff, Err: wire.ErrTruncated}
	errConnData        = &wire.DecodeError{Field: "to connection data", Offset: connDataOff, Err: wire.ErrTruncated}
	errCodeShort       = &wire.DecodeError{Field: "error code", Offset: idEnd, Err: wire.ErrTruncated}
	errRelayLenShort   = &wire.DecodeError{Field: "length", Offset: relayLenOff, Err: wire.ErrTruncated}
	errContentShort    = &wire.DecodeError{Field: "content", Offset: relayDataOff,
		Err: fmt.Errorf("%w: fewer content bytes than the length declares", wire.ErrTruncated)}
	errContentLong = &wire.DecodeError{Field: "content", Offset: relayDataOff,
		Err: fmt.Errorf("%w: more content bytes than the length declares", ErrTrailing)}

	errBindReceivedTrailing = &wire.DecodeError{Field: "BIND_RECEIVED", Offset: bindReceivedLen, Err: ErrTrailing}
	errPingTrailing         = &wire.DecodeError{Field: "PING", Offset: pingLen, Err: ErrTrailing}
	errAcceptedTrailing     = &wire.DecodeError{Field: "ACCEPTED", Offset: pairLen, Err: ErrTrailing}
	errRejectedTrailing     = &wire.DecodeError{Field: "REJECTED", Offset: pairLen, Err: ErrTrailing}
	errDisconnectTrailing   = &wire.DecodeError{Field: "DISCONNECT", Offset: pairLen, Err: ErrTrailing}
	errCloseTrailing        = &wire.DecodeError{Field: "CLOSE", Offset: closeLen, Err: ErrTrailing}
	errErrorTrailing        = &wire.DecodeError{Field: "ERROR", Offset: errorLen, Err: ErrTrailing}
)

// Encoder refusals.
var (
	errDataTooLong    = fmt.Errorf("relay: connection data longer than %d bytes: %w", MaxConnectionData, wire.ErrTooLong)
	errContentTooLong = fmt.Errorf("relay: RELAY content longer than %d bytes: %w", maxRelayField, wire.ErrTooLong)
)

// PeekHeader checks the header of the message b starts with and returns its
// type, so a server can pick the decoder. It returns a [*wire.DecodeError]
// wrapping [wire.ErrTruncated] (fewer than 4 bytes), [wire.ErrMagic] (not
// 0xDA72), [ErrVersion] or [ErrType] (unknown or reserved type). With
// ErrVersion and ErrType the returned Type is still the header's type byte,
// so a server can find the allocation to answer with an ERROR of code
// [CodeInvalidProtocolVersion]. It allocates nothing.
func PeekHeader(b []byte) (Type, error) {
	switch {
	case len(b) < HeaderLen:
		return 0, errHeaderShort
	case b[0] != sig0 || b[1] != sig1:
		return 0, errSignature
	}
	t := Type(b[3])
	switch {
	case b[2] != Version:
		return t, errVersion
	case !t.Known():
		return t, errType
	}
	return t, nil
}

// LooksLikeMessage reports whether b starts with a header PeekHeader
// accepts: the cheap test that tells a relay message from another
// protocol's datagram on a shared port.
func LooksLikeMessage(b []byte) bool {
	_, err := PeekHeader(b)
	return err == nil
}

// checkHeader checks that b starts with a version-0 header of type t.
func checkHeader(b []byte, t Type) error {
	switch {
	case len(b) < HeaderLen:
		return errHeaderShort
	case b[0] != sig0 || b[1] != sig1:
		return errSignature
	case b[2] != Version:
		return errVersion
	case Type(b[3]) != t:
		return errType
	}
	return nil
}

func appendHeader(b []byte, t Type) []byte {
	return append(b, sig0, sig1, Version, byte(t))
}

// Message is what every message of the protocol implements.
type Message interface {
	// Type is the message's type.
	Type() Type
	// Decode parses a whole datagram into the message. Byte-slice fields
	// alias b. On error the message is unchanged.
	Decode(b []byte) error
	// Len is the size AppendTo writes.
	Len() int
	// AppendTo appends the encoded message to b and returns the extended
	// slice, or b unchanged and an error if a field does not fit the format.
	AppendTo(b []byte) ([]byte, error)
}

// Interface guards.
var (
	_ Message = (*Bind)(nil)
	_ Message = (*BindReceived)(nil)
	_ Message = (*Ping)(nil)
	_ Message = (*ConnectRequest)(nil)
	_ Message = (*Accepted)(nil)
	_ Message = (*Rejected)(nil)
	_ Message = (*Disconnect)(nil)
	_ Message = (*Relay)(nil)
	_ Message = (*Close)(nil)
	_ Message = (*Error)(nil)
)
