// Package qos encodes and decodes the QoS echo protocol: a client sends a
// request (magic 0x59) carrying its game title and custom data, and the server
// answers with a response (magic 0x95) that echoes the custom data byte for
// byte with a flow-control nibble, so the client can measure latency and loss.
//
// Request layout:
//
//	0x59 | version<<4 | flow (flow must be 0) | title length L (counts itself) |
//	title (L-1 bytes of UTF-8) | custom data
//
// Response layout:
//
//	0x95 | version<<4 | flow | custom data (the request's bytes after the title)
//
// A datagram of either kind is at most 1500 bytes. The only version defined is
// 0. Decoders alias their input and allocate nothing, not even on error: the
// errors they return are fixed values (each a *wire.DecodeError naming the
// field), so a flood of malformed datagrams costs no garbage.
package qos

import (
	"errors"
	"time"
	"unicode/utf8"

	"github.com/gamegate/gamegate/wire"
)

// Protocol constants.
const (
	RequestMagic  = 0x59 // first byte of a request
	ResponseMagic = 0x95 // first byte of a response
	Version       = 0    // the only packet format version defined

	// MaxPacket is the largest request or response payload, in bytes.
	MaxPacket = 1500
	// MinRequest is the smallest request: magic, version/flow, and a title
	// length byte of 1 (an empty title).
	MinRequest = 3
	// MinResponse is the smallest response: magic and version/flow.
	MinResponse = 2
	// MaxTitle is the longest title in bytes: the length byte counts itself.
	MaxTitle = 254

	headerLen = 2
)

// Unit is the time one flow-control unit stands for.
const Unit = 2 * time.Minute

// Errors returned by the decoders, beyond the wire sentinels they wrap.
var (
	// ErrVersion reports a packet whose version nibble is not 0.
	ErrVersion = errors.New("unsupported version")
	// ErrRequestFlow reports a request whose flow-control nibble is not 0.
	ErrRequestFlow = errors.New("request flow control is not zero")
	// ErrTitleEncoding reports a title that is not valid UTF-8.
	ErrTitleEncoding = errors.New("title is not valid UTF-8")
)

// The decode errors are fixed values: every field of this format sits at a
// fixed offset, so no error needs building at run time.
var (
	errTooShort       = &wire.DecodeError{Field: "header", Offset: 0, Err: wire.ErrTruncated}
	errTooLong        = &wire.DecodeError{Field: "payload", Offset: MaxPacket, Err: wire.ErrTooLong}
	errRequestMagic   = &wire.DecodeError{Field: "type", Offset: 0, Err: wire.ErrMagic}
	errResponseMagic  = &wire.DecodeError{Field: "type", Offset: 0, Err: wire.ErrMagic}
	errVersion        = &wire.DecodeError{Field: "version", Offset: 1, Err: ErrVersion}
	errRequestFlow    = &wire.DecodeError{Field: "flow control", Offset: 1, Err: ErrRequestFlow}
	errTitleLenZero   = &wire.DecodeError{Field: "title length", Offset: 2, Err: wire.ErrRange}
	errTitleTruncated = &wire.DecodeError{Field: "title length", Offset: 2, Err: wire.ErrTruncated}
	errTitleEncoding  = &wire.DecodeError{Field: "title", Offset: 3, Err: ErrTitleEncoding}
)

// FlowControl is the low nibble of a response's second byte: no flow control,
// a voluntary back-off of 1-7 units, or a ban of 1-8 units.
type FlowControl uint8

// FlowNone asks nothing of the client.
const FlowNone FlowControl = 0

const banBit FlowControl = 0x8

// Backoff returns the flow control asking the client to back off voluntarily
// for units × [Unit]; units must be in [1, 7].
func Backoff(units int) (FlowControl, error) {
	if units < 1 || units > 7 {
		return 0, errors.New("back-off units must be in [1, 7]")
	}
	return FlowControl(units), nil
}

// Ban returns the flow control telling the client it is banned for
// units × [Unit]; units must be in [1, 8] (the nibble stores units-1).
func Ban(units int) (FlowControl, error) {
	if units < 1 || units > 8 {
		return 0, errors.New("ban units must be in [1, 8]")
	}
	return banBit | FlowControl(units-1), nil
}

// IsBan reports whether f announces a ban.
func (f FlowControl) IsBan() bool { return f&banBit != 0 }

// IsBackoff reports whether f asks for a voluntary back-off.
func (f FlowControl) IsBackoff() bool { return f != FlowNone && !f.IsBan() }

// Units is the number of units f stands for (0 for none).
func (f FlowControl) Units() int {
	f &= 0xF
	if f.IsBan() {
		return int(f&7) + 1
	}
	return int(f)
}

// Duration is how long f asks the client to stay away: Units × [Unit].
func (f FlowControl) Duration() time.Duration { return time.Duration(f.Units()) * Unit }

func (f FlowControl) String() string {
	switch {
	case f&0xF == FlowNone:
		return "none"
	case f.IsBan():
		return "ban " + f.Duration().String()
	default:
		return "back-off " + f.Duration().String()
	}
}

// Request is a QoS echo request.
type Request struct {
	Version uint8  // upper nibble of byte 1; only 0 is defined
	Title   []byte // the game title, UTF-8, at most MaxTitle bytes
	Custom  []byte // the client's data, echoed in the response
}

// LooksLikeRequest reports whether b has the shape of a request at fixed
// offsets: 3 to 1500 bytes, magic 0x59, version 0 and flow control 0, and a
// title length that is not zero and ends within b. It is the cheap test
// that tells a request from another protocol's datagram on a shared port;
// Decode checks the rest (the title's encoding).
func LooksLikeRequest(b []byte) bool {
	return len(b) >= MinRequest && len(b) <= MaxPacket &&
		b[0] == RequestMagic && b[1] == Version<<4 &&
		b[2] != 0 && headerLen+int(b[2]) <= len(b)
}

// Decode parses b into r. Title and Custom alias b.
func (r *Request) Decode(b []byte) error {
	switch {
	case len(b) < MinRequest:
		return errTooShort
	case len(b) > MaxPacket:
		return errTooLong
	case b[0] != RequestMagic:
		return errRequestMagic
	case b[1]>>4 != Version:
		return errVersion
	case b[1]&0xF != 0:
		return errRequestFlow
	}
	titleLen := int(b[2])
	if titleLen == 0 {
		return errTitleLenZero
	}
	end := headerLen + titleLen
	if end > len(b) {
		return errTitleTruncated
	}
	title := b[headerLen+1 : end : end]
	if !utf8.Valid(title) {
		return errTitleEncoding
	}
	r.Version = b[1] >> 4
	r.Title = title
	r.Custom = b[end:len(b):len(b)]
	return nil
}

// Len is the encoded size of r.
func (r *Request) Len() int { return headerLen + 1 + len(r.Title) + len(r.Custom) }

// AppendTo appends the encoded request to b. It refuses a title that is too
// long or not UTF-8, a version above 15, and a request over MaxPacket bytes.
func (r *Request) AppendTo(b []byte) ([]byte, error) {
	switch {
	case r.Version > 0xF:
		return b, errors.New("qos: version does not fit a nibble")
	case len(r.Title) > MaxTitle:
		return b, errors.New("qos: title longer than 254 bytes")
	case !utf8.Valid(r.Title):
		return b, errors.New("qos: title is not valid UTF-8")
	case r.Len() > MaxPacket:
		return b, errors.New("qos: request longer than 1500 bytes")
	}
	b = append(b, RequestMagic, r.Version<<4, byte(len(r.Title)+1))
	b = append(b, r.Title...)
	return append(b, r.Custom...), nil
}

// Response is a QoS echo response.
type Response struct {
	Version uint8       // upper nibble of byte 1; only 0 is defined
	Flow    FlowControl // lower nibble of byte 1
	Custom  []byte      // the request's custom data
}

// Decode parses b into r. Custom aliases b. Any flow nibble is accepted.
func (r *Response) Decode(b []byte) error {
	switch {
	case len(b) < MinResponse:
		return errTooShort
	case len(b) > MaxPacket:
		return errTooLong
	case b[0] != ResponseMagic:
		return errResponseMagic
	case b[1]>>4 != Version:
		return errVersion
	}
	r.Version = b[1] >> 4
	r.Flow = FlowControl(b[1] & 0xF)
	r.Custom = b[headerLen:len(b):len(b)]
	return nil
}

// Len is the encoded size of r.
func (r *Response) Len() int { return headerLen + len(r.Custom) }

// AppendTo appends the encoded response to b.
func (r *Response) AppendTo(b []byte) ([]byte, error) {
	switch {
	case r.Version > 0xF || r.Flow > 0xF:
		return b, errors.New("qos: version or flow control does not fit a nibble")
	case r.Len() > MaxPacket:
		return b, errors.New("qos: response longer than 1500 bytes")
	}
	return AppendResponse(b, r.Flow, r.Custom), nil
}

// AppendResponse appends the version-0 response echoing custom with flow f:
// the server's hot path. The caller guarantees custom came from a decoded
// request, so the response is at least one byte shorter than that request.
func AppendResponse(b []byte, f FlowControl, custom []byte) []byte {
	b = append(b, ResponseMagic, Version<<4|byte(f&0xF))
	return append(b, custom...)
}
