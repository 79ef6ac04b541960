package gamespy3

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// firstPart is testdata/vectors.txt's first-last: keys and values, an
// empty key, section byte 1, the player_ and score_ columns.
func firstPart(t testing.TB) []byte {
	return testutil.VectorsByName(t, testutil.VectorFile)["first-last"].Bytes
}

func TestDecode(t *testing.T) {
	v := testutil.VectorsByName(t, testutil.VectorFile)
	if got := AppendPart(nil, 7, 0, true, v["first-last"].Bytes[16:]); !bytes.Equal(got, v["first-last"].Bytes) {
		t.Fatalf("AppendPart: % x", got)
	}
	n, last, body, err := Part(v["first-last"].Bytes)
	if err != nil || n != 0 || !last {
		t.Fatalf("got %d %v %v", n, last, err)
	}
	var b Body
	if err := b.Decode(body, true); err != nil {
		t.Fatal(err)
	}
	if len(b.Pairs) != 2 || string(b.Pairs[1].Value) != "strike" || len(b.Columns) != 2 ||
		string(b.Columns[0].Name) != "player_" || len(b.ColumnValues(b.Columns[1])) != 2 || string(b.ColumnValues(b.Columns[1])[0]) != "-1" {
		t.Fatalf("got %+v", b)
	}
	n, last, body, err = Part(v["second"].Bytes)
	if err != nil || n != 1 || last || b.Decode(body, false) != nil || len(b.Pairs) != 0 || len(b.Columns) != 2 ||
		string(b.Columns[1].Name) != "team_t" || string(b.ColumnValues(b.Columns[1])[1]) != "Blue" {
		t.Fatalf("second part: %d %v %+v (%v)", n, last, b, err)
	}
	if c, err := Challenge(v["challenge"].Bytes); err != nil || c != 9513307 {
		t.Fatalf("challenge: got %d %v", c, err)
	}
	if c, err := Challenge(append(AppendRequest(nil, TypeChallenge, 7, 0, false)[2:7], "-123\x00"...)); err != nil || c != -123 {
		t.Fatalf("challenge: got %d %v", c, err)
	}
	// A challenge past 2^31 is sent as its 32 bits.
	c, err := Challenge([]byte("\x09\x00\x00\x00\x073000000000\x00"))
	if req := AppendRequest(nil, TypeStatus, 7, c, true); err != nil || binary.BigEndian.Uint32(req[7:11]) != 3000000000 {
		t.Fatalf("challenge 3000000000: got % x (%v)", req, err)
	}
	if _, err := Challenge([]byte("\x09\x00\x00\x00\x075000000000\x00")); err == nil {
		t.Fatal("a challenge past 32 bits decoded")
	}
}

// Every prefix of a part is refused or decodes to no more than the whole.
func TestDecodeTruncated(t *testing.T) {
	firstPart := firstPart(t)
	var b Body
	for n := range len(firstPart) {
		_, _, body, err := Part(firstPart[:n])
		if err != nil {
			continue
		}
		if b.Decode(body, true) == nil && (len(b.Pairs) > 2 || len(b.Columns) > 2) {
			t.Fatalf("[:%d]: %+v", n, b)
		}
	}
	if _, err := Challenge([]byte{9, 0, 0, 0, 7, '1'}); err == nil {
		t.Fatal("a challenge without its NUL decoded")
	}
}

func BenchmarkDecode(b *testing.B) {
	_, _, body, _ := Part(firstPart(b))
	var d Body
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = d.Decode(body, true)
	}
}

func FuzzDecode(f *testing.F) {
	for _, v := range testutil.ReadVectors(f, testutil.VectorFile) {
		f.Add(v.Bytes)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		_, _ = Challenge(d)
		if _, _, body, err := Part(d); err == nil {
			var b Body
			_ = b.Decode(body, true)
			_ = b.Decode(body, false)
		}
	})
}

func TestDecodeAllocs(t *testing.T) {
	_, _, body, _ := Part(firstPart(t))
	var b Body
	_ = b.Decode(body, true)
	if n := testing.AllocsPerRun(100, func() { _ = b.Decode(body, true) }); n != 0 {
		t.Fatalf("got %v allocations, want 0", n)
	}
}
