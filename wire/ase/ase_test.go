package ase

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestPeek(t *testing.T) {
	v := testutil.Vectors(t)
	if !LooksLikeRequest(v["request"].Bytes) || LooksLikeRequest([]byte("ss")) || LooksLikeRequest(nil) {
		t.Error("LooksLikeRequest: wrong verdict")
	}
	if !LooksLikeResponse(v["response-full"].Bytes) || LooksLikeResponse(v["bad-header"].Bytes) || LooksLikeResponse([]byte("EYE")) {
		t.Error("LooksLikeResponse: wrong verdict")
	}
}

func TestDecodeFull(t *testing.T) {
	var r Response
	if err := r.Decode(testutil.Vectors(t)["response-full"].Bytes); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s", r.Game, r.Port, r.Name, r.GameType, r.Map, r.Version, r.Password, r.NumPlayers, r.MaxPlayers)
	if want := "mta|22003|Gate MTA|Freeroam|San Andreas|1.6|0|2|32"; got != want {
		t.Errorf("header: got %s, want %s", got, want)
	}
	if len(r.Rules) != 2 || string(r.Rules[1].Key) != "gamemode" || string(r.Rules[1].Value) != "race" || !r.Terminated {
		t.Errorf("rules: got %v (terminated %v)", r.Rules, r.Terminated)
	}
	if len(r.Players) != 2 {
		t.Fatalf("players: got %d, want 2", len(r.Players))
	}
	a, b := r.Players[0], r.Players[1]
	if string(a.Name) != "Alice" || string(a.Team) != "Red" || string(a.Skin) != "cj" || string(a.Score) != "12" ||
		string(a.Ping) != "40" || string(a.Time) != "300" {
		t.Errorf("player 0: got %v", a)
	}
	if string(b.Name) != "Bob" || b.Team != nil || b.Skin != nil || string(b.Score) != "3" || string(b.Ping) != "55" || b.Time != nil {
		t.Errorf("player 1: got %v", b)
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
	b := []byte("EYE1\x01\x01\x01\x01\x01\x01\x01\x01\x01")
	for range MaxRules + 1 {
		b = append(b, 2, 'k', 1)
	}
	if err := r.Decode(b); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d rules: got %v, want ErrTooLong", MaxRules+1, err)
	}
	b = append([]byte("EYE1\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"), make([]byte, MaxPlayers+1)...)
	if err := r.Decode(b); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d players: got %v, want ErrTooLong", MaxPlayers+1, err)
	}
	if err := r.Decode(make([]byte, MaxDatagram+1)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("oversized datagram: got %v, want ErrTooLong", err)
	}
}

// Every prefix of an answer is rejected with a *wire.DecodeError or is a
// shorter answer (one ending between fields); a prefix that cuts the
// fixed fields or a string is always rejected.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "response" {
			continue
		}
		var whole Response
		if err := whole.Decode(v.Bytes); err != nil {
			t.Fatal(err)
		}
		for n := range len(v.Bytes) {
			var r Response
			err := r.Decode(v.Bytes[:n])
			var de *wire.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
			if err == nil && n < headerLen+9 {
				t.Fatalf("%s[:%d]: decoded without its fixed fields", name, n)
			}
			if err == nil && len(r.Players) == len(whole.Players) && len(r.Rules) == len(whole.Rules) && r.Terminated == whole.Terminated &&
				len(whole.Players) > 0 {
				t.Fatalf("%s[:%d]: decoded as the whole answer", name, n)
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
			t.Fatal(err)
		}
		if name != "response-zero" { // its zero length bytes encode as ones
			testutil.Reencodes(t, v.Bytes, r.AppendTo)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := testutil.Vectors(t)["response-full"].Bytes
	var r Response
	_ = r.Decode(b)
	if n := testing.AllocsPerRun(100, func() { _ = r.Decode(b) }); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	in := testutil.Vectors(b)["response-full"].Bytes
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
		if len(r.Rules) > MaxRules || len(r.Players) > MaxPlayers {
			t.Fatalf("%d rules, %d players: past the bounds", len(r.Rules), len(r.Players))
		}
		out, err := r.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded answer does not encode: %v", err)
		}
		if err := r2.Decode(out); err != nil {
			t.Fatalf("re-decode of %q: %v", out, err)
		}
		if fmt.Sprintf("%v", r) != fmt.Sprintf("%v", r2) {
			t.Fatalf("round trip changed the answer:\n%v\n%v", r, r2)
		}
	})
}
