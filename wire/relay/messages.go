package relay

import "encoding/binary"

// BindReceived is the relay's answer to a valid BIND: a bare header.
type BindReceived struct{}

// Type returns [TypeBindReceived].
func (*BindReceived) Type() Type { return TypeBindReceived }

// Decode checks that b is a BIND_RECEIVED.
func (m *BindReceived) Decode(b []byte) error {
	if err := checkHeader(b, TypeBindReceived); err != nil {
		return err
	}
	if len(b) > bindReceivedLen {
		return errBindReceivedTrailing
	}
	return nil
}

// Len is the encoded size, 4.
func (*BindReceived) Len() int { return bindReceivedLen }

// AppendTo appends the encoded message to b. It never fails.
func (*BindReceived) AppendTo(b []byte) ([]byte, error) {
	return appendHeader(b, TypeBindReceived), nil
}

// Ping keeps a binding alive; the relay sends it back to its sender byte for
// byte.
type Ping struct {
	AllocationID AllocationID // the sender's allocation
	// Number is chosen by the sender to match echoes to pings. It is read and
	// written little-endian, as the shipped client writes it (1 is 01 00),
	// although the protocol page calls every field big-endian: the relay never
	// interprets it, so a big-endian sender sees its own bytes come back.
	Number uint16
}

// Type returns [TypePing].
func (*Ping) Type() Type { return TypePing }

// Decode parses b into m.
func (m *Ping) Decode(b []byte) error {
	if err := checkHeader(b, TypePing); err != nil {
		return err
	}
	switch {
	case len(b) < idEnd:
		return errIDShort
	case len(b) < pingLen:
		return errPingNumberShort
	case len(b) > pingLen:
		return errPingTrailing
	}
	m.AllocationID = AllocationID(b[idOff:idEnd])
	m.Number = binary.LittleEndian.Uint16(b[idEnd:pingLen])
	return nil
}

// Len is the encoded size, 22.
func (*Ping) Len() int { return pingLen }

// AppendTo appends the encoded message to b. It never fails.
func (m *Ping) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypePing)
	b = append(b, m.AllocationID[:]...)
	return binary.LittleEndian.AppendUint16(b, m.Number), nil
}

// ConnectRequest asks the relay to connect the sender to the allocation that
// ToConnectionData designates (the host's connection data).
type ConnectRequest struct {
	AllocationID AllocationID // the sender's allocation
	// ToConnectionData is the target's opaque connection data, at most
	// [MaxConnectionData] bytes. Decode aliases it to the input, zero padding
	// included: the shipped client pads it to 255 bytes.
	ToConnectionData []byte
}

// Type returns [TypeConnectRequest].
func (*ConnectRequest) Type() Type { return TypeConnectRequest }

// Decode parses b into m. ToConnectionData aliases b.
func (m *ConnectRequest) Decode(b []byte) error {
	if err := checkHeader(b, TypeConnectRequest); err != nil {
		return err
	}
	switch {
	case len(b) < idEnd:
		return errIDShort
	case len(b) < connDataOff:
		return errConnDataLen
	}
	end := connDataOff + int(b[connLenOff])
	switch {
	case end > len(b):
		return errConnData
	case end < len(b):
		return newTrailing("CONNECT_REQUEST", end)
	}
	m.AllocationID = AllocationID(b[idOff:idEnd])
	m.ToConnectionData = b[connDataOff:end:end]
	return nil
}

// Len is the size AppendTo writes, 21 plus the connection data's length.
func (m *ConnectRequest) Len() int { return connDataOff + len(m.ToConnectionData) }

// AppendTo appends the encoded message to b, with the length byte equal to
// the connection data's length. It refuses connection data over 255 bytes.
func (m *ConnectRequest) AppendTo(b []byte) ([]byte, error) {
	return m.appendTo(b, false)
}

// AppendShipped appends the message as the shipped client writes it: length
// byte 255 and the connection data zero-padded to 255 bytes (276 bytes in
// all). It refuses connection data over 255 bytes.
func (m *ConnectRequest) AppendShipped(b []byte) ([]byte, error) {
	return m.appendTo(b, true)
}

func (m *ConnectRequest) appendTo(b []byte, padded bool) ([]byte, error) {
	n := len(m.ToConnectionData)
	if n > MaxConnectionData {
		return b, errDataTooLong
	}
	b = appendHeader(b, TypeConnectRequest)
	b = append(b, m.AllocationID[:]...)
	return appendConnectionData(b, m.ToConnectionData, padded), nil
}

// appendConnectionData appends a length byte and data, zero-padded to 255
// bytes when padded. The caller has checked len(data) <= 255.
func appendConnectionData(b, data []byte, padded bool) []byte {
	if !padded {
		b = append(b, byte(len(data)))
		return append(b, data...)
	}
	b = append(b, MaxConnectionData)
	b = append(b, data...)
	return append(b, zeroPad[:MaxConnectionData-len(data)]...)
}

// zeroPad is the padding of the shipped layout. (Appending make([]byte, n)
// is optimised away by the compiler, but not under the race detector.)
var zeroPad [MaxConnectionData]byte

// Accepted tells a requester that its CONNECT_REQUEST succeeded.
type Accepted struct {
	From AllocationID // the host, whose connection data the request named
	To   AllocationID // the requester
}

// Type returns [TypeAccepted].
func (*Accepted) Type() Type { return TypeAccepted }

// Decode parses b into m.
func (m *Accepted) Decode(b []byte) error {
	return decodePair(b, TypeAccepted, errAcceptedTrailing, &m.From, &m.To)
}

// Len is the encoded size, 36.
func (*Accepted) Len() int { return pairLen }

// AppendTo appends the encoded message to b. It never fails.
func (m *Accepted) AppendTo(b []byte) ([]byte, error) {
	return appendPair(b, TypeAccepted, &m.From, &m.To), nil
}

// Rejected tells a requester that the host it asked for has no room left.
type Rejected struct {
	From AllocationID // the host
	To   AllocationID // the requester
}

// Type returns [TypeRejected].
func (*Rejected) Type() Type { return TypeRejected }

// Decode parses b into m.
func (m *Rejected) Decode(b []byte) error {
	return decodePair(b, TypeRejected, errRejectedTrailing, &m.From, &m.To)
}

// Len is the encoded size, 36.
func (*Rejected) Len() int { return pairLen }

// AppendTo appends the encoded message to b. It never fails.
func (m *Rejected) AppendTo(b []byte) ([]byte, error) {
	return appendPair(b, TypeRejected, &m.From, &m.To), nil
}

// Disconnect ends the connection between two allocations; either side may
// send it, and the relay forwards it to the other.
type Disconnect struct {
	From AllocationID // the side that disconnects
	To   AllocationID // the side being disconnected
}

// Type returns [TypeDisconnect].
func (*Disconnect) Type() Type { return TypeDisconnect }

// Decode parses b into m.
func (m *Disconnect) Decode(b []byte) error {
	return decodePair(b, TypeDisconnect, errDisconnectTrailing, &m.From, &m.To)
}

// Len is the encoded size, 36.
func (*Disconnect) Len() int { return pairLen }

// AppendTo appends the encoded message to b. It never fails.
func (m *Disconnect) AppendTo(b []byte) ([]byte, error) {
	return appendPair(b, TypeDisconnect, &m.From, &m.To), nil
}

// decodePair decodes the body shared by ACCEPTED, REJECTED and DISCONNECT,
// leaving from and to unchanged on error.
func decodePair(b []byte, t Type, trailing error, from, to *AllocationID) error {
	if err := checkHeader(b, t); err != nil {
		return err
	}
	switch {
	case len(b) < toOff:
		return errFromShort
	case len(b) < pairLen:
		return errToShort
	case len(b) > pairLen:
		return trailing
	}
	*from = AllocationID(b[fromOff:toOff])
	*to = AllocationID(b[toOff:pairLen])
	return nil
}

func appendPair(b []byte, t Type, from, to *AllocationID) []byte {
	b = appendHeader(b, t)
	b = append(b, from[:]...)
	return append(b, to[:]...)
}

// Relay carries game data from one allocation to a connected one; the relay
// forwards the datagram unchanged.
type Relay struct {
	From AllocationID // the sender
	To   AllocationID // the receiver
	// Content is the game data, at most 65535 bytes; how much a relay
	// forwards is its policy (see [DefaultMaxRelayContent]). Decode aliases
	// it to the input.
	Content []byte
}

// Type returns [TypeRelay].
func (*Relay) Type() Type { return TypeRelay }

// Decode parses b into m. Content aliases b. The big-endian length must
// equal the number of bytes after it exactly: fewer is [wire.ErrTruncated],
// more is [ErrTrailing], both reported on the "content" field. Decode
// allocates nothing, on success or on error.
func (m *Relay) Decode(b []byte) error {
	if err := checkHeader(b, TypeRelay); err != nil {
		return err
	}
	switch {
	case len(b) < toOff:
		return errFromShort
	case len(b) < pairLen:
		return errToShort
	case len(b) < relayDataOff:
		return errRelayLenShort
	}
	end := relayDataOff + int(binary.BigEndian.Uint16(b[relayLenOff:relayDataOff]))
	switch {
	case end > len(b):
		return errContentShort
	case end < len(b):
		return errContentLong
	}
	m.From = AllocationID(b[fromOff:toOff])
	m.To = AllocationID(b[toOff:pairLen])
	m.Content = b[relayDataOff:end:end]
	return nil
}

// Len is the encoded size, 38 plus the content's length.
func (m *Relay) Len() int { return relayDataOff + len(m.Content) }

// AppendTo appends the encoded message to b. It refuses content over 65535
// bytes, which the 16-bit length cannot declare.
func (m *Relay) AppendTo(b []byte) ([]byte, error) {
	if len(m.Content) > maxRelayField {
		return b, errContentTooLong
	}
	b = appendPair(b, TypeRelay, &m.From, &m.To)
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Content)))
	return append(b, m.Content...), nil
}

// Close asks the relay to drop the sender's binding. It is idempotent, and
// the shipped client never sends it.
type Close struct {
	AllocationID AllocationID // the sender's allocation
}

// Type returns [TypeClose].
func (*Close) Type() Type { return TypeClose }

// Decode parses b into m.
func (m *Close) Decode(b []byte) error {
	if err := checkHeader(b, TypeClose); err != nil {
		return err
	}
	switch {
	case len(b) < closeLen:
		return errIDShort
	case len(b) > closeLen:
		return errCloseTrailing
	}
	m.AllocationID = AllocationID(b[idOff:idEnd])
	return nil
}

// Len is the encoded size, 20.
func (*Close) Len() int { return closeLen }

// AppendTo appends the encoded message to b. It never fails.
func (m *Close) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypeClose)
	return append(b, m.AllocationID[:]...), nil
}

// Error tells a client why the relay refused one of its messages.
type Error struct {
	AllocationID AllocationID // the client's allocation
	// Code is the reason. Decode accepts any value, so that a client of this
	// package can still log a code defined after it.
	Code ErrorCode
}

// Type returns [TypeError].
func (*Error) Type() Type { return TypeError }

// Decode parses b into m.
func (m *Error) Decode(b []byte) error {
	if err := checkHeader(b, TypeError); err != nil {
		return err
	}
	switch {
	case len(b) < idEnd:
		return errIDShort
	case len(b) < errorLen:
		return errCodeShort
	case len(b) > errorLen:
		return errErrorTrailing
	}
	m.AllocationID = AllocationID(b[idOff:idEnd])
	m.Code = ErrorCode(b[idEnd])
	return nil
}

// Len is the encoded size, 21.
func (*Error) Len() int { return errorLen }

// AppendTo appends the encoded message to b. It never fails.
func (m *Error) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypeError)
	b = append(b, m.AllocationID[:]...)
	return append(b, byte(m.Code)), nil
}
