package gqp

import (
	"bytes"

	"github.com/gamegate/gamegate/wire"
)

// Reassembler joins the datagrams of one response, in arrival order, until
// one ends with EOT. It copies what it is given, so the caller may reuse its
// read buffer, and it never holds more than its limit.
//
// The zero Reassembler is ready to use. After an error it keeps returning
// that error until Reset.
type Reassembler struct {
	// Limit is the most bytes the response may total; 0, or anything above
	// MaxResponse, means MaxResponse.
	Limit int

	buf  []byte
	done bool
	err  error
}

// Reset readies the Reassembler for the next response, keeping its buffer.
func (r *Reassembler) Reset() {
	r.buf = r.buf[:0]
	r.done = false
	r.err = nil
}

// Add appends one datagram and reports whether the response is now complete,
// that is whether the datagram ended with EOT. It fails with
// [wire.ErrTooLong] on field "response" when the total would pass the limit,
// and on field "trailer" when a byte follows EOT: within the datagram, or in
// a datagram added after completion. Offsets count from the start of the
// response.
func (r *Reassembler) Add(datagram []byte) (complete bool, err error) {
	if r.err != nil {
		return false, r.err
	}
	limit := r.Limit
	if limit <= 0 || limit > MaxResponse {
		limit = MaxResponse
	}
	switch i := bytes.IndexByte(datagram, EOT); {
	case r.done && len(datagram) > 0:
		r.err = wire.NewDecodeError("trailer", len(r.buf), wire.ErrTooLong)
	case len(datagram) > limit-len(r.buf):
		r.err = wire.NewDecodeError("response", limit, wire.ErrTooLong)
	case i >= 0 && i != len(datagram)-1:
		r.err = wire.NewDecodeError("trailer", len(r.buf)+i+1, wire.ErrTooLong)
	case i >= 0:
		r.done = true
	}
	if r.err != nil {
		return false, r.err
	}
	r.buf = append(r.buf, datagram...)
	return r.done, nil
}

// Bytes returns the response so far. It aliases the Reassembler's buffer and
// is valid until the next Add or Reset.
func (r *Reassembler) Bytes() []byte { return r.buf }
