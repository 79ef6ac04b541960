package gamespy2

import (
	"bytes"
	"testing"
)

// Bodies in the layout GameSpy 2 servers answer with (the GameSpy SDK's
// query layout as America's Army and Halo send it): keys and values up to
// an empty key; a players' table with its count byte; a teams' table
// without one, as some games send it.
var (
	infoBody    = []byte("hostname\x00Caf\xe9\x00numplayers\x002\x00\x00\x00")
	playersBody = []byte("\x00\x02player_\x00score_\x00\x00Ren\xe9e\x0012\x00B\xf6b\x00-3\x00")
	teamsBody   = []byte("\x00team_t\x00score_t\x00\x00Red\x0020\x00Blue\x0010\x00")
)

func TestDecode(t *testing.T) {
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

func FuzzDecode(f *testing.F) {
	for _, b := range [][]byte{infoBody, playersBody, teamsBody} {
		f.Add(AppendAnswer(nil, 1, b))
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
