package quake2

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// dialectOf is the dialect of a vector kind.
func dialectOf(kind string) Dialect {
	switch {
	case strings.HasSuffix(kind, "qw"):
		return QuakeWorld
	case strings.HasSuffix(kind, "fivem"):
		return FiveM
	}
	return Quake2
}

func TestDecodeQuake2(t *testing.T) {
	var r Response
	if err := r.Decode(testutil.Vectors(t)["q2-status"].Bytes, Quake2); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get("hostname"); string(v) != "Gate Q2 \xe9" || len(r.Vars) != 6 {
		t.Errorf("info: got %q", r.Vars)
	}
	got := fmt.Sprintf("%d %d %s %v|%d %d %s|%d %d %s %s %v", r.Players[0].Frags, r.Players[0].Ping, r.Players[0].Name, r.Players[0].HasAddress,
		r.Players[1].Frags, r.Players[1].Ping, r.Players[1].Name, r.Players[2].Frags, r.Players[2].Ping, r.Players[2].Name, r.Players[2].Address, r.Players[2].HasAddress)
	if want := "12 45 Alice false|0 0 Bot\xe9|-3 120 Eve 127.0.0.1:27901 true"; got != want || len(r.Players) != 3 {
		t.Errorf("players: got %q, want %q", got, want)
	}
}

func TestDecodeQuakeWorld(t *testing.T) {
	var r Response
	b := testutil.Vectors(t)["qw-status"].Bytes
	if err := r.Decode(b, QuakeWorld); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get("*version"); string(v) != "MVDSV 0.36" {
		t.Errorf("*version: got %q", v)
	}
	p := r.Players[0]
	if len(r.Players) != 2 || p.ID != 5 || p.Frags != 10 || p.Time != 300 || p.Ping != 25 || string(p.Name) != "Alice" ||
		string(p.Skin) != "base" || p.Top != 4 || p.Bottom != 11 || len(r.Players[1].Skin) != 0 || r.Players[1].Frags != -2 {
		t.Errorf("players: got %+v", r.Players)
	}
	if err := r.Decode(b, Quake2); !errors.Is(err, ErrNotResponse) {
		t.Errorf("a QuakeWorld answer read as Quake 2's: got %v", err)
	}
}

func TestDecodeFiveM(t *testing.T) {
	var r Response
	b := testutil.Vectors(t)["fivem-info"].Bytes
	if err := r.Decode(b, FiveM); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get("hostname"); string(v) != "Gate RP \u2605 Los Santos" || len(r.Vars) != 9 || len(r.Players) != 0 {
		t.Errorf("got %q, %d players", r.Vars, len(r.Players))
	}
	if err := r.Decode(b, Quake2); !errors.Is(err, ErrNotResponse) {
		t.Errorf("a FiveM answer read as Quake 2's: got %v", err)
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if !strings.HasPrefix(v.Kind, "bad") {
			continue
		}
		var r Response
		var de *wire.DecodeError
		if err := r.Decode(v.Bytes, dialectOf(v.Kind)); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
}

func TestDecodeBounds(t *testing.T) {
	var r Response
	b := []byte("\xff\xff\xff\xffprint\n")
	for range MaxVars + 1 {
		b = append(b, `\k\v`...)
	}
	if err := r.Decode(b, Quake2); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d vars: got %v, want ErrTooLong", MaxVars+1, err)
	}
	b = []byte("\xff\xff\xff\xffprint\n\n")
	for range MaxPlayers + 1 {
		b = append(b, "1 2 \"p\"\n"...)
	}
	if err := r.Decode(b, Quake2); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d players: got %v, want ErrTooLong", MaxPlayers+1, err)
	}
	if err := r.Decode(make([]byte, MaxDatagram+1), Quake2); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("oversized datagram: got %v, want ErrTooLong", err)
	}
	if _, ok := parseInt([]byte("1234567890")); ok {
		t.Error("a 10-digit number was read")
	}
}

// Every prefix of an answer is rejected with a *wire.DecodeError or is a
// shorter answer: the text has no lengths, so a prefix ending between
// lines or pairs is one. A prefix cutting a player line before its
// closing quote is rejected.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "q2" && v.Kind != "qw" && v.Kind != "fivem" {
			continue
		}
		d := dialectOf(v.Kind)
		for n := range len(v.Bytes) {
			var r Response
			err := r.Decode(v.Bytes[:n], d)
			var de *wire.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
			if err == nil && n < 5 {
				t.Fatalf("%s[:%d]: decoded without its header", name, n)
			}
			lines := strings.Split(string(v.Bytes[:n]), "\n")
			if last := lines[len(lines)-1]; len(lines) > 2 && strings.Count(last, `"`)%2 == 1 && err == nil {
				t.Fatalf("%s[:%d]: a cut player line %q decoded", name, n, last)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "q2" && v.Kind != "qw" && v.Kind != "fivem" {
			continue
		}
		var r Response
		if err := r.Decode(v.Bytes, dialectOf(v.Kind)); err != nil {
			t.Fatal(err)
		}
		out, err := r.AppendTo(nil)
		var r2 Response
		if err != nil || r2.Decode(out, r.Dialect) != nil || fmt.Sprint(r) != fmt.Sprint(r2) {
			t.Errorf("%s: round trip: %v\n%v\n%v", name, err, r, r2)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	for _, c := range []struct {
		name string
		d    Dialect
	}{{"q2-status", Quake2}, {"qw-status", QuakeWorld}} {
		b := testutil.Vectors(t)[c.name].Bytes
		var r Response
		_ = r.Decode(b, c.d)
		if n := testing.AllocsPerRun(100, func() { _ = r.Decode(b, c.d) }); n != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", c.name, n)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	in := testutil.Vectors(b)["qw-status"].Bytes
	var r Response
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := r.Decode(in, QuakeWorld); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range []Dialect{Quake2, QuakeWorld, FiveM} {
			var r, r2 Response
			if !testutil.Decodes(t, b, func(b []byte) error { return r.Decode(b, d) }) {
				continue
			}
			if len(r.Vars) > MaxVars || len(r.Players) > MaxPlayers {
				t.Fatalf("%d vars, %d players: past the bounds", len(r.Vars), len(r.Players))
			}
			out, err := r.AppendTo(nil)
			if err != nil {
				t.Fatalf("decoded answer does not encode: %v", err)
			}
			if err := r2.Decode(out, d); err != nil {
				t.Fatalf("re-decode of %q: %v", out, err)
			}
			if fmt.Sprint(r) != fmt.Sprint(r2) {
				t.Fatalf("round trip changed the answer:\n%v\n%v", r, r2)
			}
		}
	})
}
