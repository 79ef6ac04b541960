package gamespy1

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestDecodeVectors(t *testing.T) {
	v := testutil.VectorsByName(t, "testdata/vectors.txt")
	var p Packet
	if err := p.Decode(v["part1"].Bytes); err != nil {
		t.Fatal(err)
	}
	if len(p.Pairs) != 3 || string(p.Pairs[1].Value) != "DM-Deck16][" || string(p.QueryID) != "12" || p.Part != 1 || p.Final {
		t.Fatalf("got %+v", p)
	}
	if err := p.Decode(v["final"].Bytes); err != nil {
		t.Fatal(err)
	}
	if len(p.Pairs) != 4 || string(p.Pairs[0].Value) != "Caf\xe9" || p.Part != 2 || !p.Final {
		t.Fatalf("got %+v", p)
	}
	if got := string(wire.AppendWindows1252(nil, p.Pairs[0].Value)); got != "Café" {
		t.Fatalf("got %q, want Café", got)
	}
	if err := p.Decode(v["single"].Bytes); err != nil || len(p.Pairs) != 2 || p.QueryID != nil || p.Part != 0 {
		t.Fatalf("got %+v (%v)", p, err)
	}
	if err := p.Decode(v["bad"].Bytes); !errors.Is(err, wire.ErrMagic) {
		t.Fatalf("got %v, want ErrMagic", err)
	}
}

// Every prefix of an answer decodes cleanly or is refused, and its pairs
// but the last (a key or value cut short, or queryid's cut to a key of
// its own) are the whole's.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.VectorsByName(t, "testdata/vectors.txt") {
		if v.Kind != "answer" {
			continue
		}
		var whole, p Packet
		if err := whole.Decode(v.Bytes); err != nil {
			t.Fatal(err)
		}
		for n := range len(v.Bytes) {
			err := p.Decode(v.Bytes[:n])
			if n == 0 {
				if err == nil {
					t.Fatalf("%s: the empty prefix decoded", name)
				}
				continue
			}
			if err != nil || len(p.Pairs) > len(whole.Pairs)+1 {
				t.Fatalf("%s[:%d]: %v, %d pairs of %d", name, n, err, len(p.Pairs), len(whole.Pairs))
			}
			for i, kv := range p.Pairs[:max(len(p.Pairs)-1, 0)] {
				if !bytes.Equal(kv.Key, whole.Pairs[i].Key) || !bytes.Equal(kv.Value, whole.Pairs[i].Value) {
					t.Fatalf("%s[:%d]: pair %d is %q=%q", name, n, i, kv.Key, kv.Value)
				}
			}
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := testutil.VectorsByName(t, "testdata/vectors.txt")["part1"].Bytes
	var p Packet
	_ = p.Decode(b)
	if n := testing.AllocsPerRun(100, func() { _ = p.Decode(b) }); n != 0 {
		t.Fatalf("got %v allocations, want 0", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	d := testutil.VectorsByName(b, "testdata/vectors.txt")["part1"].Bytes
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(d)))
	for b.Loop() {
		_ = p.Decode(d)
	}
}

// FuzzDecode: never panics; what decodes encodes to what decodes the same.
func FuzzDecode(f *testing.F) {
	for _, v := range testutil.ReadVectors(f, "testdata/vectors.txt") {
		f.Add(v.Bytes)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p, q Packet
		if p.Decode(b) != nil {
			return
		}
		if bytes.Contains(p.QueryID, []byte{'\\'}) {
			t.Fatal("a query ID holds a backslash")
		}
		enc := p.AppendTo(nil)
		if len(enc) == 0 {
			return // nothing but an empty queryid: nothing to encode
		}
		if err := q.Decode(enc); err != nil {
			t.Fatalf("%q re-encoded as %q: %v", b, enc, err)
		}
		if q.Final != p.Final || len(q.Pairs) < len(p.Pairs) || !bytes.Equal(q.QueryID, p.QueryID) {
			t.Fatalf("%q: %+v, then %+v", b, p, q)
		}
	})
}
