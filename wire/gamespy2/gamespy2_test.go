package gamespy2

import (
	"bytes"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// bodies returns the bodies of testdata/vectors.txt's answers: keys and
// values; a players' table with its count byte; a teams' table without
// one.
func bodies(t testing.TB) (info, players, teams []byte) {
	v := testutil.VectorsByName(t, testutil.VectorFile)
	body := func(name string) []byte {
		_, b, ok := Answer(v[name].Bytes)
		if !ok {
			t.Fatalf("vector %s is not an answer", name)
		}
		return b
	}
	return body("info"), body("players"), body("teams-no-count")
}

func TestDecode(t *testing.T) {
	infoBody, playersBody, teamsBody := bodies(t)
	pairs, err := DecodeInfo(nil, infoBody)
	if err != nil || len(pairs) != 2 || string(pairs[0].Value) != "Caf\xe9" {
		t.Fatalf("info: got %q (%v)", pairs, err)
	}
	var tb Table
	if err := tb.Decode(playersBody); err != nil || len(tb.Fields) != 2 || tb.Rows() != 2 || string(tb.Row(1)[1]) != "-3" {
		t.Fatalf("players: got %q (%v)", tb, err)
	}
	if err := tb.Decode(teamsBody); err != nil || len(tb.Fields) != 2 || tb.Rows() != 2 || string(tb.Row(1)[0]) != "Blue" {
		t.Fatalf("teams without a count: got %q (%v)", tb, err)
	}
	req := AppendRequest(nil, 0x01020304, SectionPlayers)
	if !bytes.Equal(req, []byte{0xFE, 0xFD, 0, 1, 2, 3, 4, 0, 0xFF, 0}) {
		t.Fatalf("request % x", req)
	}
	if id, body, ok := Answer(AppendAnswer(nil, 7, infoBody)); !ok || id != 7 || !bytes.Equal(body, infoBody) {
		t.Fatalf("answer: %d %v", id, ok)
	}
}

// Every prefix decodes to no more than the whole.
func TestDecodeTruncated(t *testing.T) {
	infoBody, playersBody, teamsBody := bodies(t)
	for _, body := range [][]byte{infoBody, playersBody, teamsBody} {
		var whole, tb Table
		_ = whole.Decode(body)
		full, _ := DecodeInfo(nil, body)
		for n := range len(body) {
			if p, err := DecodeInfo(nil, body[:n]); err != nil || len(p) > len(full) {
				t.Fatalf("info %q[:%d]: %d pairs (%v)", body, n, len(p), err)
			}
			if tb.Decode(body[:n]) == nil && tb.Rows() > whole.Rows() {
				t.Fatalf("table %q[:%d]: %d rows", body, n, tb.Rows())
			}
		}
	}
	if _, _, ok := Answer([]byte{0, 1, 2, 3}); ok {
		t.Fatal("a 4-byte answer")
	}
}

func TestDecodeAllocs(t *testing.T) {
	infoBody, playersBody, _ := bodies(t)
	pairs := make([]Pair, 0, 8)
	if n := testing.AllocsPerRun(100, func() { pairs, _ = DecodeInfo(pairs[:0], infoBody) }); n != 0 {
		t.Fatalf("info: got %v allocations, want 0", n)
	}
	var tb Table
	_ = tb.Decode(playersBody)
	if n := testing.AllocsPerRun(100, func() { _ = tb.Decode(playersBody) }); n != 0 {
		t.Fatalf("table: got %v allocations, want 0", n)
	}
}

func BenchmarkDecodeTable(b *testing.B) {
	_, playersBody, _ := bodies(b)
	var tb Table
	b.ReportAllocs()
	b.SetBytes(int64(len(playersBody)))
	for b.Loop() {
		_ = tb.Decode(playersBody)
	}
}

func FuzzDecode(f *testing.F) {
	for _, v := range testutil.ReadVectors(f, testutil.VectorFile) {
		f.Add(v.Bytes)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		_, body, ok := Answer(d)
		if !ok {
			return
		}
		_, _ = DecodeInfo(nil, body)
		var tb Table
		if tb.Decode(body) == nil {
			if len(tb.Fields) > 0 && len(tb.Values)%len(tb.Fields) != 0 {
				t.Fatalf("%d values for %d fields", len(tb.Values), len(tb.Fields))
			}
			for i := range tb.Rows() {
				if len(tb.Row(i)[0]) == 0 {
					t.Fatalf("row %d %q starts empty", i, tb.Row(i))
				}
			}
		}
	})
}
