package unreal2

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// answer is any decoded payload.
type answer interface {
	Decode([]byte) error
	AppendTo([]byte) ([]byte, error)
}

// decodePacket splits d and decodes its payload by kind.
func decodePacket(d []byte) (answer, error) {
	kind, payload, err := SplitPacket(d)
	if err != nil {
		return nil, err
	}
	var a answer
	switch kind {
	case KindInfo:
		a = new(Info)
	case KindRules:
		a = new(Rules)
	default:
		a = new(Players)
	}
	return a, a.Decode(payload)
}

func utf8Of(s String) string { return string(AppendUTF8(nil, s, true)) }

func TestRequest(t *testing.T) {
	v := testutil.Vectors(t)
	if got := AppendRequest(nil, KindPlayers); string(got) != string(v["request-players"].Bytes) || !LooksLikeRequest(got) {
		t.Errorf("got % x", got)
	}
	if LooksLikeRequest([]byte{0x79, 0, 0, 0, 3}) || LooksLikeRequest(v["info"].Bytes) {
		t.Error("LooksLikeRequest claims what is not a request")
	}
}

func TestDecodeInfo(t *testing.T) {
	v := testutil.Vectors(t)
	_, p, err := SplitPacket(v["info"].Bytes)
	var i Info
	if err == nil {
		err = i.Decode(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	if i.ServerID != 7 || utf8Of(i.IP) != "127.0.0.1" || i.GamePort != 7777 || i.QueryPort != 7778 || utf8Of(i.Name) != "Gate ☆ UT" ||
		!i.Name.UTF16() || utf8Of(i.Map) != "DM-Rankin" || utf8Of(i.GameType) != "xDeathMatch" || i.NumPlayers != 3 || i.MaxPlayers != 16 {
		t.Errorf("got %+v", i)
	}
	e, err := DecodeExtra(i.Extra, false)
	if err != nil || e.Ping != 0 || e.Flags != 0x41 || utf8Of(e.Skill) != "Adept" || !e.HasFlags || e.HasWaves {
		t.Errorf("extra: got %+v, %v", e, err)
	}
	_, p, _ = SplitPacket(v["kfinfo"].Bytes)
	if err := i.Decode(p); err != nil {
		t.Fatal(err)
	}
	e, err = DecodeExtra(i.Extra, true)
	if err != nil || e.WaveCurrent != 2 || e.WaveTotal != 10 || e.Ping != 30 || utf8Of(e.Skill) != "Normal" || !e.HasWaves {
		t.Errorf("Killing Floor extra: got %+v, %v", e, err)
	}
	if e, err := DecodeExtra(nil, false); err == nil || e.Ping != 0 {
		t.Errorf("no extra: got %+v, %v; want an error", e, err)
	}
}

func TestDecodeRulesJoined(t *testing.T) {
	v := testutil.Vectors(t)
	_, p1, _ := SplitPacket(v["rules-1"].Bytes)
	_, p2, _ := SplitPacket(v["rules-2"].Bytes)
	var r Rules
	if err := r.Decode(append(append([]byte(nil), p1...), p2...)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rule := range r.Rules {
		got = append(got, utf8Of(rule.Key)+"="+utf8Of(rule.Value))
	}
	if want := "[ServerMode=dedicated Mutator=MutInstaGib GamePassword=True AdminName=Zoë Mutator=MutQuadJump]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
	if !r.Rules[3].Value.Stray {
		t.Error("the stray 01 byte was not seen")
	}
}

func TestDecodePlayers(t *testing.T) {
	_, p, _ := SplitPacket(testutil.Vectors(t)["players"].Bytes)
	var ps Players
	if err := ps.Decode(p); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(ps.Players))
	for _, pl := range ps.Players {
		got += fmt.Sprintf(" %d:%s:%d:%d", pl.ID, utf8Of(pl.Name), pl.Ping, pl.Score)
	}
	if want := "3 1:Alice:40:12 2:Zoë:0:5 0:Red Team Score:0:3"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if raw := string(AppendUTF8(nil, ps.Players[0].Name, false)); raw != "\x1bÿ\x01\x01Alice" {
		t.Errorf("unstripped: got %q", raw)
	}
}

func TestAppendUTF8(t *testing.T) {
	for _, c := range []struct {
		s    String
		want string
	}{
		{String{Len: 6, Raw: []byte("caf\xe9\x80")}, "café€"},
		{String{Len: 0x83, Raw: []byte{'a', 0, 0x3d, 0xd8, 0x00, 0xde}}, "a😀"},
		{String{Len: 0x82, Raw: []byte{'a', 0, 0, 0}}, "a"}, // a final NUL dropped
		{String{Len: 0x81, Raw: []byte{0x00, 0xd8}}, "\uFFFD"},
		{String{Len: 8, Raw: []byte("\x1b\x01\x02\x03ab\tc")}, "abc"},
	} {
		if got := utf8Of(c.s); got != c.want {
			t.Errorf("%q: got %q, want %q", c.s.Raw, got, c.want)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad" {
			continue
		}
		var de *wire.DecodeError
		if _, err := decodePacket(v.Bytes); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
}

func TestDecodeBounds(t *testing.T) {
	var r Rules
	if err := r.Decode(make([]byte, 2*(MaxRules+1))); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d rules: got %v, want ErrTooLong", MaxRules+1, err)
	}
	var p Players
	if err := p.Decode(make([]byte, 17*(MaxPlayers+1))); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d players: got %v, want ErrTooLong", MaxPlayers+1, err)
	}
	if _, _, err := SplitPacket(make([]byte, MaxDatagram+1)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("oversized datagram: got %v, want ErrTooLong", err)
	}
}

// Every prefix of an answer is rejected with a *wire.DecodeError or is a
// shorter answer; an info answer cut before its counts, and a rules or
// players answer cut inside an entry, are rejected.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind == "bad" || v.Kind == "request" {
			continue
		}
		whole, err := decodePacket(v.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		wantOut, _ := whole.AppendTo(nil)
		for n := range len(v.Bytes) {
			a, err := decodePacket(v.Bytes[:n])
			var de *wire.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
			if err != nil {
				continue
			}
			if _, ok := a.(*Info); ok && n < len(v.Bytes)-len(whole.(*Info).Extra) {
				t.Fatalf("%s[:%d]: an info answer cut before its counts decoded", name, n)
			}
			if out, _ := a.AppendTo(nil); len(out) == len(wantOut) && v.Kind != "info" && v.Kind != "kfinfo" {
				t.Fatalf("%s[:%d]: decoded as the whole answer", name, n)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind == "bad" || v.Kind == "request" {
			continue
		}
		a, err := decodePacket(v.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		testutil.Reencodes(t, v.Bytes[PacketHeaderLen:], a.AppendTo)
	}
}

func TestDecodeAllocs(t *testing.T) {
	v := testutil.Vectors(t)
	var i Info
	var r Rules
	var p Players
	buf := make([]byte, 0, 256)
	for _, c := range []struct {
		name string
		a    answer
	}{{"info", &i}, {"rules-2", &r}, {"players", &p}} {
		_, payload, _ := SplitPacket(v[c.name].Bytes)
		_ = c.a.Decode(payload)
		if n := testing.AllocsPerRun(100, func() {
			if c.a.Decode(payload) != nil {
				t.Fatal("decode failed")
			}
			for _, pl := range p.Players {
				buf = AppendUTF8(buf[:0], pl.Name, true)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", c.name, n)
		}
	}
}

func BenchmarkDecodePlayers(b *testing.B) {
	_, payload, _ := SplitPacket(testutil.Vectors(b)["players"].Bytes)
	var p Players
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if err := p.Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, d []byte) {
		var a answer
		if !testutil.Decodes(t, d, func(b []byte) (err error) { a, err = decodePacket(b); return err }) {
			return
		}
		switch a := a.(type) {
		case *Info:
			_, _ = DecodeExtra(a.Extra, true)
			_, _ = DecodeExtra(a.Extra, false)
		case *Rules:
			if len(a.Rules) > MaxRules {
				t.Fatalf("%d rules", len(a.Rules))
			}
		case *Players:
			if len(a.Players) > MaxPlayers {
				t.Fatalf("%d players", len(a.Players))
			}
		}
		out, err := a.AppendTo(d[:PacketHeaderLen:PacketHeaderLen])
		if err != nil {
			t.Fatalf("decoded answer does not encode: %v", err)
		}
		a2, err := decodePacket(out)
		if err != nil {
			t.Fatalf("re-decode of %x: %v", out, err)
		}
		if fmt.Sprintf("%v", a) != fmt.Sprintf("%v", a2) {
			t.Fatalf("round trip changed the answer:\n%v\n%v", a, a2)
		}
	})
}
