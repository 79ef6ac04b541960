package relay

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef-conndata")

func gcm(t testing.TB, key []byte) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}

func testAllocation(t testing.TB) *Allocation {
	t.Helper()
	a, err := NewAllocation(7, "r", time.UnixMilli(1_800_000_000_123))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The sealing key is HKDF-SHA256 of the secret with the fixed context
// string, and the layout is the documented one: this opens sealed data
// without the Sealer.
func TestSealUsesHKDF(t *testing.T) {
	s, err := NewSealer(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	a := testAllocation(t)
	data, err := s.Seal(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != ConnectionDataLen || data[0] != 2 {
		t.Fatalf("sealed %d bytes, version %d; want %d bytes, version 2", len(data), data[0], ConnectionDataLen)
	}
	key, err := hkdf.Key(sha256.New, testSecret, nil, "gamegate relay connection data v2", 32)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gcm(t, key).Open(nil, data[1:13], data[13:], data[:1])
	if err != nil {
		t.Fatalf("opening with the HKDF key: %v", err)
	}
	if !bytes.Equal(plain[:16], a.ID[:]) || !bytes.Equal(plain[16:80], a.Key[:]) ||
		binary.BigEndian.Uint16(plain[80:]) != 7 || int64(binary.BigEndian.Uint64(plain[82:])) != a.Expires.UnixMilli() {
		t.Fatalf("plaintext %x does not hold the allocation", plain)
	}
}

// Connection data sealed before HKDF (version 1) still opens, so
// allocations made before an upgrade keep binding.
func TestOpenVersion1(t *testing.T) {
	s, err := NewSealer(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	a := testAllocation(t)
	old := sha256.Sum256(append([]byte("gamegate relay connection data\x00"), testSecret...))
	var plain [sealPlainLen]byte
	copy(plain[:16], a.ID[:])
	copy(plain[16:80], a.Key[:])
	binary.BigEndian.PutUint16(plain[80:], 7)
	binary.BigEndian.PutUint64(plain[82:], uint64(a.Expires.UnixMilli()))
	data := make([]byte, 13, ConnectionDataLen)
	data[0] = 1
	rand.Read(data[1:13])
	data = gcm(t, old[:]).Seal(data, data[1:13], plain[:], data[:1])
	var got Allocation
	if err := s.Open(data, &got); err != nil {
		t.Fatalf("version 1 data: %v", err)
	}
	if got.ID != a.ID || got.Key != a.Key || got.MaxConnections != 7 || !got.Expires.Equal(a.Expires) {
		t.Fatalf("got %+v, want %+v", got, a)
	}
	// The version byte is authenticated: relabelled data does not open.
	data[0] = 2
	if s.Open(data, &got) == nil {
		t.Fatal("version 1 data relabelled as version 2 opened")
	}
}

func TestOpenRefuses(t *testing.T) {
	s, _ := NewSealer(testSecret)
	other, _ := NewSealer([]byte("another-secret-0123456789abcdef-xyz"))
	a := testAllocation(t)
	data, _ := s.Seal(a)
	var got Allocation
	if other.Open(data, &got) == nil {
		t.Error("opened with another secret")
	}
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x01
		if s.Open(bad, &got) == nil {
			t.Fatalf("opened with byte %d changed", i)
		}
	}
	for n := range len(data) {
		if s.Open(data[:n], &got) == nil {
			t.Fatalf("opened %d of %d bytes", n, len(data))
		}
	}
	// Rotation: a sealer whose first secret is new still opens the old one's.
	rotated, _ := NewSealer([]byte("the-new-secret-0123456789abcdef-xyz"), testSecret)
	if err := rotated.Open(data, &got); err != nil || got.ID != a.ID {
		t.Fatalf("rotated sealer: %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	s, _ := NewSealer(testSecret)
	// Fixed, so that every fuzzing process seals the same allocation.
	a := &Allocation{ID: [16]byte{1, 2, 3}, Key: [64]byte{4, 5, 6}, MaxConnections: 3, Expires: time.UnixMilli(1_800_000_000_000)}
	data, _ := s.Seal(a)
	f.Add(data)
	f.Add(append(bytes.Clone(data), make([]byte, 255-len(data))...))
	f.Add([]byte{1})
	f.Add([]byte{})
	// The same allocation bound to a network: version 3.
	bound := *a
	bound.BindNetwork = netip.MustParsePrefix("198.51.100.0/24")
	boundData, _ := s.Seal(&bound)
	f.Add(boundData)
	f.Add(boundData[:ConnectionDataLen])
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Allocation
		if s.Open(b, &got) == nil && (got.ID != a.ID || got.Key != a.Key || got.MaxConnections != a.MaxConnections || !got.Expires.Equal(a.Expires) ||
			got.BindNetwork.IsValid() && got.BindNetwork != bound.BindNetwork) {
			t.Fatalf("opened data the sealer never made: %x", b)
		}
	})
}
