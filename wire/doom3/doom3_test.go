package doom3

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestRequest(t *testing.T) {
	want := testutil.Vectors(t)["request"].Bytes
	if got := AppendRequest(nil, 0x11223344); string(got) != string(want) || len(got) != RequestLen {
		t.Errorf("got % x, want % x", got, want)
	}
}

func TestDecodeDoom3(t *testing.T) {
	var r Response
	if err := r.Decode(testutil.Vectors(t)["response-doom3"].Bytes); err != nil {
		t.Fatal(err)
	}
	if r.Challenge != 0x11223344 || r.Protocol != 0x00010029 || r.HasSize || len(r.Vars) != 6 || r.Layout != LayoutPlain ||
		r.OSMask != 1 || r.IsETQW {
		t.Errorf("got %+v", r)
	}
	got := fmt.Sprintf("%v", r.Players)
	if want := "[{0 50 16384 [94 49 65 108 105 99 101] 0 [] 0} {1 0 0 [66 111 116] 0 [] 0} {3 80 25000 [90 111 235] 0 [] 0}]"; got != want {
		t.Errorf("players: got %s, want %s", got, want)
	}
	if n, _ := r.Get("si_name"); string(AppendPlain(nil, n)) != "Gate Doom \xe9" {
		t.Errorf("plain name: got %q", AppendPlain(nil, n))
	}
}

func TestDecodeLayouts(t *testing.T) {
	v := testutil.Vectors(t)
	var r Response
	if err := r.Decode(v["response-quake4"].Bytes); err != nil {
		t.Fatal(err)
	}
	if r.Layout != LayoutClanTag || len(r.Players) != 1 || string(r.Players[0].ClanTag) != "^3[Q4]" || r.Players[0].Rate != 9000 {
		t.Errorf("Quake 4: got %+v", r)
	}
	if err := r.Decode(v["response-etqw"].Bytes); err != nil {
		t.Fatal(err)
	}
	if r.Layout != LayoutClanTagTypeFlag || !r.IsETQW || !r.HasSize || r.Size != 1400 || len(r.Players) != 2 ||
		string(r.Players[0].ClanTag) != "GDF" || r.Players[1].TypeFlag != 1 || r.Players[0].Rate != 0 ||
		r.ETQW != (ETQW{Ranked: 1, TimeLeft: 600, GameState: 2, ServerType: 0, InterestedClients: 7}) {
		t.Errorf("ETQW: got %+v", r)
	}
}

func TestAppendPlain(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"^1Red ^7Box", "Red Box"},
		{"^XFF0000Red", "Red"},
		{"^X12", "12"}, // too short for ^X and six: ^X is a code
		{"a^\nb", "a^\nb"},
		{"end^", "end^"},
	} {
		if got := string(AppendPlain(nil, []byte(c.in))); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad" {
			continue
		}
		var r Response
		var de *wire.DecodeError
		if err := r.Decode(v.Bytes); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
}

func TestDecodeBounds(t *testing.T) {
	var r Response
	b := append([]byte("\xff\xffinfoResponse\x00"), make([]byte, 8)...)
	for range MaxVars + 1 {
		b = append(b, "kk\x00v\x00"...)
	}
	if err := r.Decode(b); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d vars: got %v, want ErrTooLong", MaxVars+1, err)
	}
	if err := r.Decode(make([]byte, MaxDatagram+1)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("oversized datagram: got %v, want ErrTooLong", err)
	}
}

// Every prefix of an answer is rejected with a *wire.DecodeError: the
// OS mask (and ETQW's fields) end every answer.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "response" {
			continue
		}
		for n := range len(v.Bytes) {
			var r Response
			err := r.Decode(v.Bytes[:n])
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "response" {
			continue
		}
		var r Response
		if err := r.Decode(v.Bytes); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		testutil.Reencodes(t, v.Bytes, r.AppendTo)
	}
}

func TestDecodeAllocs(t *testing.T) {
	for _, name := range []string{"response-doom3", "response-etqw"} {
		b := testutil.Vectors(t)[name].Bytes
		var r Response
		_ = r.Decode(b)
		if n := testing.AllocsPerRun(100, func() { _ = r.Decode(b) }); n != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, n)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	in := testutil.Vectors(b)["response-doom3"].Bytes
	var r Response
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := r.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r, r2 Response
		if !testutil.Decodes(t, b, r.Decode) {
			return
		}
		if len(r.Vars) > MaxVars || len(r.Players) >= EndOfPlayers {
			t.Fatalf("%d vars, %d players: past the bounds", len(r.Vars), len(r.Players))
		}
		out, err := r.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded answer does not encode: %v", err)
		}
		if string(out) != string(b) {
			t.Fatalf("decode → encode: got %x, want %x", out, b)
		}
		if err := r2.Decode(out); err != nil || fmt.Sprint(r) != fmt.Sprint(r2) {
			t.Fatalf("re-decode: %v\n%v\n%v", err, r, r2)
		}
	})
}
