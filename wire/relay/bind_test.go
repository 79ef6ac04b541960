package relay

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func hmacVectors(t testing.TB) map[string][]byte {
	m := make(map[string][]byte)
	for name, v := range testutil.VectorsByName(t, "testdata/hmac.txt") {
		m[name] = v.Bytes
	}
	return m
}

// The HMAC vectors of specs/relay.md, over 295-byte BINDs built here the way
// the shipped client builds them.
func TestHMACVectors(t *testing.T) {
	hv := hmacVectors(t)
	tests := []struct {
		name  string
		key   string
		data  string
		nonce uint16
		mac   string
		head  []byte // the first 8 bytes the BIND must start with
	}{
		{"64-byte key nonce 0", "key-00-3f", "data-ramp", 0, "mac-nonce-0", []byte{0xda, 0x72, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff}},
		{"64-byte key nonce 1", "key-00-3f", "data-ramp", 1, "mac-nonce-1", []byte{0xda, 0x72, 0x00, 0x00, 0x00, 0x01, 0x00, 0xff}},
		{"32-byte key nonce 0x0102", "key-11x32", "data-00-43", 0x0102, "mac-v3", []byte{0xda, 0x72, 0x00, 0x00, 0x00, 0x02, 0x01, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, data, want := hv[tt.key], hv[tt.data], hv[tt.mac]
			if key == nil || data == nil || len(want) != HMACSize {
				t.Fatalf("testdata/hmac.txt lacks %s, %s or %s", tt.key, tt.data, tt.mac)
			}
			m := Bind{AcceptMode: AcceptModeAuto, Nonce: tt.nonce, ConnectionData: data}
			b, err := m.AppendShipped(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != ShippedBindLen || !bytes.HasPrefix(b, tt.head) {
				t.Fatalf("BIND: got %d bytes starting %x, want %d starting %x", len(b), b[:8], ShippedBindLen, tt.head)
			}
			if pad := b[8+len(data) : ShippedSignedLen]; len(pad) > 0 && !bytes.Equal(pad, make([]byte, len(pad))) {
				t.Fatalf("padding: got %x, want zeros", pad)
			}
			signed, err := SignedRegion(b)
			if err != nil || len(signed) != ShippedSignedLen {
				t.Fatalf("SignedRegion: got %d bytes (%v), want %d", len(signed), err, ShippedSignedLen)
			}
			if got := BindMAC(key, signed); !bytes.Equal(got[:], want) {
				t.Fatalf("BindMAC: got %x, want %x", got, want)
			}
			if len(key) != KeySize {
				if err := m.Sign(key, Options{Padded: true}); !errors.Is(err, ErrKeySize) {
					t.Fatalf("Sign with a %d-byte key: got %v, want %v", len(key), err, ErrKeySize)
				}
				copy(b[ShippedSignedLen:], want)
				if err := Verify(b, key); !errors.Is(err, ErrKeySize) {
					t.Fatalf("Verify with a %d-byte key: got %v, want %v", len(key), err, ErrKeySize)
				}
				return
			}
			if err := m.Sign(key, Options{Padded: true}); err != nil || !bytes.Equal(m.HMAC[:], want) {
				t.Fatalf("Sign: got %x (%v), want %x", m.HMAC, err, want)
			}
			b, _ = m.AppendShipped(b[:0])
			if err := Verify(b, key); err != nil {
				t.Fatalf("Verify: got %v, want nil", err)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	hv := hmacVectors(t)
	key := hv["key-00-3f"]
	vs := testutil.Vectors(t)
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[i] ^= 0x01
		return b
	}
	shipped := vs["bind-shipped"].Bytes
	exact := vs["bind-exact"].Bytes
	tests := []struct {
		name string
		in   []byte
		key  []byte
		want error
	}{
		{"shipped layout", shipped, key, nil},
		{"exact layout", exact, key, nil},
		{"accept mode changed", flip(shipped, 4), key, ErrHMAC},
		{"nonce changed", flip(shipped, 5), key, ErrHMAC},
		{"padding changed", flip(shipped, 262), key, ErrHMAC},
		{"first hmac byte changed", flip(shipped, 263), key, ErrHMAC},
		{"last hmac byte changed", flip(shipped, 294), key, ErrHMAC},
		{"other key", shipped, flip(key, 63), ErrHMAC},
		{"63-byte key", shipped, key[:63], ErrKeySize},
		{"65-byte key", shipped, append(bytes.Clone(key), 0), ErrKeySize},
		{"no key", shipped, nil, ErrKeySize},
		{"truncated", shipped[:294], key, wire.ErrTruncated},
		{"trailing", append(bytes.Clone(shipped), 0), key, ErrTrailing},
		{"not a bind", vs["ping-1"].Bytes, key, ErrType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Verify(tt.in, tt.key); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// The shipped vector decodes to the message the HMAC test builds, and
// re-encodes to itself in both layouts (it is the exact layout with L = 255).
func TestBindShippedVector(t *testing.T) {
	hv := hmacVectors(t)
	in := testutil.Vectors(t)["bind-shipped"].Bytes
	var m Bind
	if err := m.Decode(in); err != nil {
		t.Fatal(err)
	}
	want := Bind{Nonce: 1, ConnectionData: hv["data-ramp"], HMAC: [HMACSize]byte(hv["mac-nonce-1"])}
	if m.Nonce != want.Nonce || !bytes.Equal(m.ConnectionData, want.ConnectionData) || m.HMAC != want.HMAC {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	for name, encode := range map[string]func([]byte) ([]byte, error){
		"AppendTo": m.AppendTo, "AppendShipped": m.AppendShipped,
	} {
		t.Run(name, func(t *testing.T) {
			if out, err := encode(nil); err != nil || !bytes.Equal(out, in) {
				t.Fatalf("got %x (%v), want %x", out, err, in)
			}
		})
	}
}

func TestBindLayouts(t *testing.T) {
	m := Bind{Nonce: 0x0201, ConnectionData: []byte{0xc1, 0xc2, 0xc3}}
	tests := []struct {
		name     string
		o        Options
		wantLen  int
		wantHead []byte
	}{
		{"exact little-endian", Options{}, 43, []byte{0xda, 0x72, 0, 0, 0, 0x01, 0x02, 3, 0xc1, 0xc2, 0xc3}},
		{"exact big-endian", Options{NonceBigEndian: true}, 43, []byte{0xda, 0x72, 0, 0, 0, 0x02, 0x01, 3, 0xc1, 0xc2, 0xc3}},
		{"padded little-endian", Options{Padded: true}, ShippedBindLen, []byte{0xda, 0x72, 0, 0, 0, 0x01, 0x02, 255, 0xc1, 0xc2, 0xc3, 0, 0}},
		{"padded big-endian", Options{Padded: true, NonceBigEndian: true}, ShippedBindLen, []byte{0xda, 0x72, 0, 0, 0, 0x02, 0x01, 255, 0xc1, 0xc2, 0xc3, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := m.AppendWith(nil, tt.o)
			if err != nil || len(out) != tt.wantLen || !bytes.HasPrefix(out, tt.wantHead) {
				t.Fatalf("got %x (%v), want %d bytes starting %x", out, err, tt.wantLen, tt.wantHead)
			}
			var back Bind
			if err := back.DecodeWith(out, tt.o); err != nil || back.Nonce != m.Nonce {
				t.Fatalf("DecodeWith: got nonce %#x (%v), want %#x", back.Nonce, err, m.Nonce)
			}
			if !bytes.HasPrefix(back.ConnectionData, m.ConnectionData) || !bytes.Equal(back.ConnectionData[3:], make([]byte, len(back.ConnectionData)-3)) {
				t.Fatalf("connection data: got %x, want c1c2c3 then zero padding", back.ConnectionData)
			}
			var other Bind
			if err := other.DecodeWith(out, Options{NonceBigEndian: !tt.o.NonceBigEndian}); err != nil || other.Nonce != 0x0102 {
				t.Fatalf("other byte order: got nonce %#x (%v), want 0x102", other.Nonce, err)
			}
		})
	}
	if got, want := m.Len(), 43; got != want {
		t.Fatalf("Len: got %d, want %d", got, want)
	}
}

// The signature covers the bytes on the wire, so signing for one layout or
// nonce order and sending another fails verification.
func TestSignCoversLayoutAndOrder(t *testing.T) {
	key := hmacVectors(t)["key-00-3f"]
	opts := []Options{{}, {NonceBigEndian: true}, {Padded: true}, {Padded: true, NonceBigEndian: true}}
	for _, signed := range opts {
		for _, sent := range opts {
			m := Bind{Nonce: 7, ConnectionData: []byte("opaque")}
			if err := m.Sign(key, signed); err != nil {
				t.Fatal(err)
			}
			out, err := m.AppendWith(nil, sent)
			if err != nil {
				t.Fatal(err)
			}
			err = Verify(out, key)
			if want := signed == sent; (err == nil) != want {
				t.Fatalf("signed with %+v, sent with %+v: got %v, want valid = %v", signed, sent, err, want)
			}
		}
	}
}

func TestConnectRequestShipped(t *testing.T) {
	m := ConnectRequest{AllocationID: idA, ToConnectionData: []byte{0xc1, 0xc2, 0xc3}}
	out, err := m.AppendShipped(nil)
	if err != nil || len(out) != 21+MaxConnectionData || out[20] != 255 {
		t.Fatalf("got %d bytes with length byte %d (%v), want %d with 255", len(out), out[20], err, 21+MaxConnectionData)
	}
	var back ConnectRequest
	if err := back.Decode(out); err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0xc1, 0xc2, 0xc3}, make([]byte, 252)...)
	if back.AllocationID != idA || !bytes.Equal(back.ToConnectionData, want) {
		t.Fatalf("got %v %x, want %v %x", back.AllocationID, back.ToConnectionData, idA, want)
	}
}

func TestSignRefusals(t *testing.T) {
	key := make([]byte, KeySize)
	m := Bind{ConnectionData: make([]byte, MaxConnectionData+1), HMAC: [HMACSize]byte{9}}
	if err := m.Sign(key, Options{}); !errors.Is(err, wire.ErrTooLong) || m.HMAC[0] != 9 {
		t.Fatalf("256 bytes of data: got %v with HMAC %x, want %v and the HMAC unchanged", err, m.HMAC, wire.ErrTooLong)
	}
	m.ConnectionData = nil
	if err := m.Sign(key[:32], Options{}); !errors.Is(err, ErrKeySize) || m.HMAC[0] != 9 {
		t.Fatalf("32-byte key: got %v with HMAC %x, want %v and the HMAC unchanged", err, m.HMAC, ErrKeySize)
	}
	if _, err := SignedRegion([]byte{0xda, 0x72, 0, 0}); !errors.Is(err, wire.ErrTruncated) {
		t.Fatalf("SignedRegion of a bare header: got %v, want %v", err, wire.ErrTruncated)
	}
}
