package relay

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"

	"github.com/gamegate/gamegate/wire"
)

// Options selects how a [Bind] is read and written where senders differ. The
// zero value matches the shipped client on decode, and writes the exact
// layout on encode.
type Options struct {
	// NonceBigEndian reads and writes the nonce big-endian, as the protocol
	// page specifies, for clients that follow it. The default is
	// little-endian: what the shipped client sends.
	NonceBigEndian bool
	// Padded makes encoders write the shipped client's layout: a length byte
	// of 255 and the connection data zero-padded to 255 bytes, 295 bytes in
	// all. Decoders read both layouts whatever it says.
	Padded bool
}

// Bind maps the sender's address to its allocation. It is the only message
// the protocol authenticates: see [Verify] and [Bind.Sign].
type Bind struct {
	AcceptMode AcceptMode // only AcceptModeAuto is defined; any value decodes
	// Nonce must grow each time the client binds from a new address, so an
	// old BIND cannot be replayed from elsewhere. Its byte order is set by
	// [Options]; little-endian by default.
	Nonce uint16
	// ConnectionData is the client's own opaque connection data, at most
	// [MaxConnectionData] bytes. Decode aliases it to the input, padding
	// included: from the shipped client it is always 255 bytes.
	ConnectionData []byte
	// HMAC authenticates every byte before it; see [SignedRegion].
	HMAC [HMACSize]byte
}

// Type returns [TypeBind].
func (*Bind) Type() Type { return TypeBind }

// Decode parses b into m, reading the nonce little-endian as the shipped
// client writes it. It accepts both layouts: the exact one and the padded one
// (which is the exact one with L = 255). ConnectionData aliases b. It does
// not check the HMAC: see [Verify].
func (m *Bind) Decode(b []byte) error { return m.DecodeWith(b, Options{}) }

// DecodeWith is [Bind.Decode] with the nonce's byte order taken from o.
func (m *Bind) DecodeWith(b []byte, o Options) error {
	l, err := bindLayout(b)
	if err != nil {
		return err
	}
	end := bindDataOff + l
	m.AcceptMode = AcceptMode(b[HeaderLen])
	m.Nonce = readNonce(b[bindNonceOff:bindDataLenOff], o)
	m.ConnectionData = b[bindDataOff:end:end]
	m.HMAC = [HMACSize]byte(b[end:])
	return nil
}

// Len is the size AppendTo writes: 40 plus the connection data's length.
// AppendShipped always writes [ShippedBindLen] bytes.
func (m *Bind) Len() int { return bindFixedLen + len(m.ConnectionData) }

// AppendTo appends m in the exact layout (the length byte equal to the
// connection data's length) with a little-endian nonce. It refuses connection
// data over 255 bytes. It writes m.HMAC as it is: call [Bind.Sign] first.
func (m *Bind) AppendTo(b []byte) ([]byte, error) { return m.AppendWith(b, Options{}) }

// AppendShipped appends m as the shipped client writes it: little-endian
// nonce, length byte 255, connection data zero-padded to 255 bytes.
func (m *Bind) AppendShipped(b []byte) ([]byte, error) {
	return m.AppendWith(b, Options{Padded: true})
}

// AppendWith appends m in the layout and nonce order o selects.
func (m *Bind) AppendWith(b []byte, o Options) ([]byte, error) {
	if len(m.ConnectionData) > MaxConnectionData {
		return b, errDataTooLong
	}
	b = appendHeader(b, TypeBind)
	b = append(b, byte(m.AcceptMode))
	if o.NonceBigEndian {
		b = binary.BigEndian.AppendUint16(b, m.Nonce)
	} else {
		b = binary.LittleEndian.AppendUint16(b, m.Nonce)
	}
	b = appendConnectionData(b, m.ConnectionData, o.Padded)
	return append(b, m.HMAC[:]...), nil
}

// Sign sets m.HMAC to the MAC of the bytes [Bind.AppendWith] writes with the
// same o, keyed with the allocation key. The layout and nonce order are part
// of what is signed, so encode with the o given here. The key must be
// [KeySize] bytes, or Sign returns [ErrKeySize] and leaves m unchanged.
func (m *Bind) Sign(key []byte, o Options) error {
	if len(key) != KeySize {
		return ErrKeySize
	}
	var buf [ShippedBindLen]byte
	out, err := m.AppendWith(buf[:0], o)
	if err != nil {
		return err
	}
	m.HMAC = BindMAC(key, out[:len(out)-HMACSize])
	return nil
}

// SignedRegion returns the bytes of the encoded BIND b that its HMAC covers:
// everything before the HMAC, 8+L bytes ([ShippedSignedLen] in the padded
// layout). The result aliases b. It fails, as [Bind.Decode] does, on anything
// that is not a whole BIND.
func SignedRegion(b []byte) ([]byte, error) {
	l, err := bindLayout(b)
	if err != nil {
		return nil, err
	}
	end := bindDataOff + l
	return b[:end:end], nil
}

// BindMAC returns HMAC-SHA256 of signed keyed with key, of any length. It is
// the bare primitive under [Verify] and [Bind.Sign], which also insist on a
// [KeySize]-byte key.
func BindMAC(key, signed []byte) [HMACSize]byte {
	h := hmac.New(sha256.New, key)
	h.Write(signed)
	var mac [HMACSize]byte
	h.Sum(mac[:0])
	return mac
}

// Verify checks the HMAC of the encoded BIND b against the allocation key:
// it returns nil if the MAC matches, [ErrKeySize] for a key that is not
// [KeySize] bytes, a [*wire.DecodeError] if b is not a whole BIND, and
// [ErrHMAC] otherwise. It works on the bytes as received, so it holds
// whatever the layout and nonce order, and compares in constant time so that
// timing reveals nothing of the expected MAC. A relay drops a BIND that fails
// without answering. Unlike the decoders it allocates: the HMAC state, a few
// hundred bytes per call.
func Verify(b, key []byte) error {
	if len(key) != KeySize {
		return ErrKeySize
	}
	signed, err := SignedRegion(b)
	if err != nil {
		return err
	}
	mac := BindMAC(key, signed)
	if !hmac.Equal(mac[:], b[len(signed):]) {
		return ErrHMAC
	}
	return nil
}

// bindLayout checks that b is a whole BIND and returns its connection data
// length L.
func bindLayout(b []byte) (int, error) {
	if err := checkHeader(b, TypeBind); err != nil {
		return 0, err
	}
	switch {
	case len(b) <= HeaderLen:
		return 0, errAcceptModeShort
	case len(b) < bindDataLenOff:
		return 0, errNonceShort
	case len(b) <= bindDataLenOff:
		return 0, errBindDataLen
	}
	l := int(b[bindDataLenOff])
	end := bindDataOff + l
	switch {
	case end > len(b):
		return 0, errBindData
	case end+HMACSize > len(b):
		// The offsets below depend on L: these errors are built when met.
		return 0, wire.NewDecodeError("hmac", end, wire.ErrTruncated)
	case end+HMACSize < len(b):
		return 0, newTrailing("BIND", end+HMACSize)
	}
	return l, nil
}

func readNonce(b []byte, o Options) uint16 {
	if o.NonceBigEndian {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func newTrailing(field string, off int) error {
	return wire.NewDecodeError(field, off, ErrTrailing)
}
