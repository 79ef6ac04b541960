package gamespy3

import (
	"encoding/binary"
	"testing"
)

// A first part as the GameSpy 3 layout has it: keys and values, an empty
// key, section byte 1, the player_ and score_ columns.
var firstPart = AppendPart(nil, 7, 0, true, []byte("hostname\x00Caf\xe9\x00mapname\x00strike\x00\x00\x01player_\x00\x00A\x00B\x00\x00score_\x00\x00-1\x003\x00\x00"))

func TestDecode(t *testing.T) {
	n, last, body, err := Part(firstPart)
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

func FuzzDecode(f *testing.F) {
	f.Add(firstPart)
	f.Add([]byte{9, 0, 0, 0, 7, '1', '2', 0})
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
	_, _, body, _ := Part(firstPart)
	var b Body
	_ = b.Decode(body, true)
	if n := testing.AllocsPerRun(100, func() { _ = b.Decode(body, true) }); n != 0 {
		t.Fatalf("got %v allocations, want 0", n)
	}
}
