package relay

import (
	"bytes"
	"errors"
	"math/bits"
	"reflect"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// FuzzDecode feeds arbitrary datagrams to every decoder. None may panic;
// errors must be *wire.DecodeError; at most one decoder, the one PeekHeader
// names, may accept a datagram; and an accepted datagram re-encodes to its
// own bytes, because every layout the decoders accept is canonical for
// AppendTo: the padded BIND is the exact layout with L = 255, and the
// padding stays in the connection data. The padded encoders are canonical
// only for L = 255; for other inputs the test checks they reach a fixed point.
func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	key := bytes.Repeat([]byte{0x42}, KeySize)
	f.Fuzz(func(t *testing.T, in []byte) {
		typ, peekErr := PeekHeader(in)
		if peekErr != nil {
			var de *wire.DecodeError
			if !errors.As(peekErr, &de) {
				t.Fatalf("PeekHeader: error %v is not a *wire.DecodeError", peekErr)
			}
		}
		accepted := 0
		for _, ty := range allTypes {
			m := newMessage(ty)
			err := m.Decode(in)
			if err != nil {
				var de *wire.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("%v.Decode: error %v is not a *wire.DecodeError", ty, err)
				}
				continue
			}
			accepted++
			if peekErr != nil || typ != ty {
				t.Fatalf("%v.Decode accepted what PeekHeader calls %v (%v)", ty, typ, peekErr)
			}
			if got, want := m.Len(), len(in); got != want {
				t.Fatalf("Len: got %d, want %d", got, want)
			}
			out, err := m.AppendTo(nil)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("decode → encode: got %x (%v), want %x", out, err, in)
			}
			back := newMessage(ty)
			if err := back.Decode(out); err != nil || !reflect.DeepEqual(back, m) {
				t.Fatalf("decode → encode → decode: got %+v (%v), want %+v", back, err, m)
			}
			switch m := m.(type) {
			case *Bind:
				fuzzBind(t, in, m, key)
			case *ConnectRequest:
				fuzzShippedConnectRequest(t, m)
			}
		}
		if accepted > 1 {
			t.Fatalf("%d decoders accepted %x, want at most 1", accepted, in)
		}
	})
}

func fuzzBind(t *testing.T, in []byte, m *Bind, key []byte) {
	var be Bind
	if err := be.DecodeWith(in, Options{NonceBigEndian: true}); err != nil {
		t.Fatalf("DecodeWith big-endian: got %v, want nil", err)
	}
	if got, want := be.Nonce, bits.ReverseBytes16(m.Nonce); got != want {
		t.Fatalf("big-endian nonce: got %#x, want %#x", got, want)
	}
	if out, err := be.AppendWith(nil, Options{NonceBigEndian: true}); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("big-endian decode → encode: got %x (%v), want %x", out, err, in)
	}
	signed, err := SignedRegion(in)
	if err != nil || !bytes.Equal(signed, in[:len(in)-HMACSize]) {
		t.Fatalf("SignedRegion: got %x (%v), want all but the last %d bytes", signed, err, HMACSize)
	}
	if err := Verify(in, key); err != nil && !errors.Is(err, ErrHMAC) {
		t.Fatalf("Verify: got %v, want nil or %v", err, ErrHMAC)
	}

	// The padded layout: canonical for L = 255, a fixed point otherwise.
	shipped, err := m.AppendShipped(nil)
	if err != nil || len(shipped) != ShippedBindLen {
		t.Fatalf("AppendShipped: got %d bytes (%v), want %d", len(shipped), err, ShippedBindLen)
	}
	if len(m.ConnectionData) == MaxConnectionData && !bytes.Equal(shipped, in) {
		t.Fatalf("AppendShipped of a padded BIND: got %x, want %x", shipped, in)
	}
	var padded Bind
	if err := padded.Decode(shipped); err != nil {
		t.Fatalf("decoding the padded layout: %v", err)
	}
	n := len(m.ConnectionData)
	if !bytes.Equal(padded.ConnectionData[:n], m.ConnectionData) || !bytes.Equal(padded.ConnectionData[n:], make([]byte, MaxConnectionData-n)) {
		t.Fatalf("padded connection data: got %x, want %x then zeros", padded.ConnectionData, m.ConnectionData)
	}
	if again, err := padded.AppendShipped(nil); err != nil || !bytes.Equal(again, shipped) {
		t.Fatalf("padded layout is not a fixed point: got %x (%v), want %x", again, err, shipped)
	}

	// Signing then verifying holds for any message that decodes.
	signedMsg := *m
	if err := signedMsg.Sign(key, Options{Padded: true}); err != nil {
		t.Fatalf("Sign: %v", err)
	}
	out, _ := signedMsg.AppendShipped(nil)
	if err := Verify(out, key); err != nil {
		t.Fatalf("Verify of a message just signed: got %v, want nil", err)
	}
}

func fuzzShippedConnectRequest(t *testing.T, m *ConnectRequest) {
	shipped, err := m.AppendShipped(nil)
	if err != nil {
		t.Fatalf("AppendShipped: %v", err)
	}
	var back ConnectRequest
	if err := back.Decode(shipped); err != nil {
		t.Fatalf("decoding the padded layout: %v", err)
	}
	again, err := back.AppendShipped(nil)
	if err != nil || !bytes.Equal(again, shipped) {
		t.Fatalf("padded layout is not a fixed point: got %x (%v), want %x", again, err, shipped)
	}
	if len(m.ToConnectionData) == MaxConnectionData {
		if out, _ := m.AppendTo(nil); !bytes.Equal(out, shipped) {
			t.Fatalf("AppendShipped of a padded request: got %x, want %x", shipped, out)
		}
	}
}

func benchRelay() Relay {
	return Relay{From: idA, To: idB, Content: bytes.Repeat([]byte{0x5a}, DefaultMaxRelayContent)}
}

func BenchmarkRelayDecode(b *testing.B) {
	m := benchRelay()
	in, err := m.AppendTo(nil)
	if err != nil {
		b.Fatal(err)
	}
	var r Relay
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := r.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRelayEncode(b *testing.B) {
	m := benchRelay()
	testutil.BenchEncode(b, &m)
}

func BenchmarkPingDecode(b *testing.B) {
	in := testutil.Vectors(b)["ping-1"].Bytes
	var p Ping
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := PeekHeader(in); err != nil {
			b.Fatal(err)
		}
		if err := p.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBindVerify(b *testing.B) {
	in := testutil.Vectors(b)["bind-shipped"].Bytes
	key := hmacVectors(b)["key-00-3f"]
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := Verify(in, key); err != nil {
			b.Fatal(err)
		}
	}
}
