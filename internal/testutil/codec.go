package testutil

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gamegate/gamegate/wire"
)

// SeedVectors adds every vector of the package's VectorFile to f's corpus
// and returns them by name.
func SeedVectors(f *testing.F) map[string]Vector {
	f.Helper()
	vs := Vectors(f)
	for _, v := range vs {
		f.Add(v.Bytes)
	}
	return vs
}

// Decodes runs decode on in and reports whether it accepted it. A refusal
// must be what every wire decoder returns for bad input: a
// *wire.DecodeError whose offset lies within in.
func Decodes(t testing.TB, in []byte, decode func([]byte) error) bool {
	t.Helper()
	err := decode(in)
	if err == nil {
		return true
	}
	var de *wire.DecodeError
	if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(in) {
		t.Fatalf("error %v is not a *wire.DecodeError within the %d-byte input", err, len(in))
	}
	return false
}

// Reencodes fails t unless appendTo encodes exactly want: what a decoder
// accepted, re-encoded by a canonical encoder.
func Reencodes(t testing.TB, want []byte, appendTo func([]byte) ([]byte, error)) {
	t.Helper()
	out, err := appendTo(nil)
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("decode → encode: got %x (%v), want %x", out, err, want)
	}
}

// Encode returns m encoded, failing t if m cannot be encoded: for tests
// that send a message built with the real encoder.
func Encode(t testing.TB, m interface {
	AppendTo([]byte) ([]byte, error)
}) []byte {
	t.Helper()
	b, err := m.AppendTo(nil)
	if err != nil {
		t.Fatalf("encoding %T: %v", m, err)
	}
	return b
}

// BenchEncode measures m's encoder into a reused buffer, reporting
// allocations and bytes per operation.
func BenchEncode(b *testing.B, m interface {
	AppendTo([]byte) ([]byte, error)
	Len() int
}) {
	b.Helper()
	out := make([]byte, 0, m.Len())
	b.ReportAllocs()
	b.SetBytes(int64(m.Len()))
	for b.Loop() {
		var err error
		if out, err = m.AppendTo(out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchDecode measures decode on in, reporting allocations and bytes per
// operation.
func BenchDecode(b *testing.B, in []byte, decode func([]byte) error) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchDecodeBeside measures decode on in as the sub-benchmark "wire" and
// baseline, a plain decoder of the same message (the one most code reaches
// for first), as "baseline", in the same run, so that a decoder's figures
// are read as a ratio to its baseline's. It first checks that both accept
// in.
func BenchDecodeBeside(b *testing.B, in []byte, decode, baseline func([]byte) error) {
	b.Helper()
	if err := decode(in); err != nil {
		b.Fatal(err)
	}
	if err := baseline(in); err != nil {
		b.Fatalf("the baseline refuses what the decoder accepts: %v", err)
	}
	b.Run("wire", func(b *testing.B) { BenchDecode(b, in, decode) })
	b.Run("baseline", func(b *testing.B) { BenchDecode(b, in, baseline) })
}

// Codec is a message type that decodes and encodes canonically: whatever
// it accepts, it re-encodes to the same bytes.
type Codec interface {
	Decode([]byte) error
	AppendTo([]byte) ([]byte, error)
	Len() int
}

// RoundTrip checks a canonical codec against one fuzz input: a refusal is
// a *wire.DecodeError within in; what decodes re-encodes to exactly in (and
// Len says so), decodes again to the same message, and decodes the same
// into reused after reused held other (no state leaks between decodes).
// Messages compare by dump. It returns the message decoded from in and the
// decode error, for checks of the codec's own.
func RoundTrip[M any, P interface {
	*M
	Codec
}](t *testing.T, in []byte, reused P, other []byte, dump func(P) string) (P, error) {
	t.Helper()
	m := P(new(M))
	if err := m.Decode(in); err != nil {
		Decodes(t, in, func([]byte) error { return err })
		return m, err
	}
	Reencodes(t, in, m.AppendTo)
	if m.Len() != len(in) {
		t.Fatalf("Len: got %d, want %d", m.Len(), len(in))
	}
	back := P(new(M))
	if err := back.Decode(in); err != nil {
		t.Fatalf("decoding the re-encoded message: %v", err)
	}
	if got, want := dump(back), dump(m); got != want {
		t.Fatalf("decode → encode → decode: got %v, want %v", got, want)
	}
	_ = reused.Decode(other)
	if err := reused.Decode(in); err != nil {
		t.Fatalf("decoding into a reused message: %v", err)
	}
	if got, want := dump(reused), dump(m); got != want {
		t.Fatalf("decoding into a reused message: got %v, want %v", got, want)
	}
	return m, nil
}
