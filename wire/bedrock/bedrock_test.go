package bedrock

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// fields returns the pong's fields joined by "|", for comparisons.
func fields(p *Pong) string {
	var s []string
	for _, f := range p.Fields[:p.NumFields] {
		s = append(s, string(f))
	}
	return strings.Join(s, "|")
}

func TestPing(t *testing.T) {
	v := testutil.Vectors(t)
	p := Ping{Time: 0x1122334455667788}
	if got := p.AppendTo(nil); !bytes.Equal(got, v["ping-gamedig"].Bytes) {
		t.Errorf("AppendTo: got %x, want %x", got, v["ping-gamedig"].Bytes)
	}
	if n := len(p.AppendTo(nil)); n != PingLen {
		t.Errorf("ping length: got %d, want %d", n, PingLen)
	}
	var q Ping
	if err := q.Decode(v["ping-open-connections"].Bytes); err != nil {
		t.Fatal(err)
	}
	if want := (Ping{Time: 1700000000000, ClientGUID: -2, OpenConnections: true}); q != want {
		t.Errorf("Decode: got %+v, want %+v", q, want)
	}
	if got := q.AppendTo(nil); !bytes.Equal(got, v["ping-open-connections"].Bytes[:PingLen]) {
		t.Errorf("AppendTo 0x02: got %x", got)
	}
}

func TestDecodePong(t *testing.T) {
	v := testutil.Vectors(t)
	for _, c := range []struct {
		name       string
		time, guid int64
		fields     string
	}{
		{"pong-bedrock-protocol", 0x0000019ab0c0ffee, 0x00823fa22fa0b48f,
			"MCPE|Gate Rock|2169|1.26.45|0|12|36661712788698255|Stone Level|Creative|1|19556|19556|0"},
		{"pong-bds", 1234, -6128765321984023552,
			"MCPE|Dedicated Server|390|1.14.60|0|10|13253860892328930865|Bedrock level|Survival|1|19132|19133"},
		{"pong-minimal", 7, 7, "MCPE|Tiny|419|1.16.100|3|8"},
		{"pong-mcee", -1, 42, "MCEE|Classroom|465|1.17.30|2|30|42|World|Survival|1|19132|19133"},
		{"pong-formatted", 99, 5, "MCPE|§l§bGate §rRock §a[1.21]|686|1.21.2|31|30|5|§eSky Isles|Adventure|2|19132|19133"},
		{"pong-pocketmine-escape", 5, 6, `MCPE|Semi\;colon Server|589|1.20.0|1|20|6|world|Survival|1|19132|19133`},
		{"pong-empty-optional", 8, 9, "MCPE|Bare|600|1.20.40|0|5|9|||||"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p Pong
			if err := p.Decode(v[c.name].Bytes); err != nil {
				t.Fatal(err)
			}
			if p.Time != c.time || p.ServerGUID != c.guid {
				t.Errorf("time, guid: got %x, %d; want %x, %d", p.Time, p.ServerGUID, c.time, c.guid)
			}
			if got := fields(&p); got != c.fields {
				t.Errorf("fields: got %q, want %q", got, c.fields)
			}
			if !bytes.Equal(p.Advertisement, v[c.name].Bytes[PongHeaderLen:]) {
				t.Errorf("advertisement: got %q", p.Advertisement)
			}
		})
	}
}

func TestPongField(t *testing.T) {
	var p Pong
	if err := p.Decode(testutil.Vectors(t)["pong-minimal"].Bytes); err != nil {
		t.Fatal(err)
	}
	if f, ok := p.Field(FieldMax); !ok || string(f) != "8" {
		t.Errorf("max: got %q, %v", f, ok)
	}
	for _, i := range []int{FieldServerID, FieldPortV6, -1, MaxFields} {
		if f, ok := p.Field(i); ok {
			t.Errorf("field %d: got %q, want absent", i, f)
		}
	}
}

func TestUnescape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`Semi\;colon`, "Semi;colon"}, {`a\;\;b`, "a;;b"}, {`plain`, "plain"}, {`back\slash`, `back\slash`}, {`\;`, ";"},
	} {
		if got := string(AppendUnescaped(nil, []byte(c.in))); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in string
		n  int
		ok bool
	}{
		{"0", 0, true}, {"19132", 19132, true}, {"999999999", MaxNumber, true}, {"1000000000", 0, false},
		{"", 0, false}, {"-1", 0, false}, {"1.5", 0, false}, {" 1", 0, false},
	} {
		if n, ok := Number([]byte(c.in)); n != c.n || ok != c.ok {
			t.Errorf("%q: got %d, %v; want %d, %v", c.in, n, ok, c.n, c.ok)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if !strings.HasPrefix(v.Kind, "bad-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var err error
			if v.Kind == "bad-ping" {
				var p Ping
				err = p.Decode(v.Bytes)
			} else {
				var p Pong
				err = p.Decode(v.Bytes)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *wire.DecodeError", err)
			}
		})
	}
	var p Pong
	for name, want := range map[string]error{
		"bad-pong-id": ErrNotPong, "bad-pong-magic": wire.ErrMagic, "bad-pong-length-long": wire.ErrTruncated,
		"bad-pong-length-short": wire.ErrTooLong, "bad-pong-five-fields": wire.ErrTruncated,
		"bad-pong-online-word": wire.ErrRange, "bad-pong-too-many-fields": wire.ErrTooLong,
	} {
		if err := p.Decode(testutil.Vectors(t)[name].Bytes); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
}

// Every prefix of a valid pong is rejected: the length prefix covers the
// advertisement exactly.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		switch v.Kind {
		case "pong":
			for n := 0; n < len(v.Bytes); n++ {
				var p Pong
				var de *wire.DecodeError
				if err := p.Decode(v.Bytes[:n]); !errors.As(err, &de) {
					t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
				}
			}
		case "ping":
			for n := 0; n < PingLen; n++ {
				var p Ping
				var de *wire.DecodeError
				if err := p.Decode(v.Bytes[:n]); !errors.As(err, &de) {
					t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
				}
			}
		}
	}
}

func TestPongRoundTrip(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "pong" {
			continue
		}
		var p, p2 Pong
		if err := p.Decode(v.Bytes); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := p.AppendTo(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := p2.Decode(out); err != nil {
			t.Fatalf("%s: re-decode: %v", name, err)
		}
		if fields(&p) != fields(&p2) || p.Time != p2.Time || p.ServerGUID != p2.ServerGUID {
			t.Errorf("%s: round trip changed the pong:\n%s\n%s", name, fields(&p), fields(&p2))
		}
		if name != "pong-minimal" && !bytes.Equal(out, v.Bytes) {
			t.Errorf("%s: re-encoded as %x, want %x", name, out, v.Bytes)
		}
	}
}

func TestPongAppendRefuses(t *testing.T) {
	p := Pong{NumFields: 6}
	for i, f := range []string{"MCPE", "a;b", "1", "v", "0", "1"} {
		p.Fields[i] = []byte(f)
	}
	if _, err := p.AppendTo(nil); err == nil {
		t.Error("an unescaped semicolon: got no error")
	}
	p.Fields[1] = []byte(`a\`)
	if _, err := p.AppendTo(nil); err == nil {
		t.Error("a backslash before the separator: got no error")
	}
	p.Fields[1] = bytes.Repeat([]byte{'x'}, MaxAdvertisement)
	if _, err := p.AppendTo(nil); err == nil {
		t.Error("an advertisement past 65535 bytes: got no error")
	}
	p.NumFields = MaxFields + 1
	if _, err := p.AppendTo(nil); err == nil {
		t.Error("NumFields past MaxFields: got no error")
	}
}

func TestAllocs(t *testing.T) {
	v := testutil.Vectors(t)
	var p Pong
	var q Ping
	buf := make([]byte, 0, 512)
	for _, name := range []string{"pong-bedrock-protocol", "pong-bds", "pong-formatted", "pong-pocketmine-escape"} {
		b := v[name].Bytes
		allocs := testing.AllocsPerRun(100, func() {
			if err := p.Decode(b); err != nil {
				t.Fatal(err)
			}
			buf = AppendUnescaped(buf[:0], p.Fields[FieldMOTD])
			if _, err := p.AppendTo(buf[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decode and encode, want 0", name, allocs)
		}
	}
	ping := v["ping-gamedig"].Bytes
	if allocs := testing.AllocsPerRun(100, func() {
		if err := q.Decode(ping); err != nil {
			t.Fatal(err)
		}
		buf = q.AppendTo(buf[:0])
	}); allocs != 0 {
		t.Errorf("ping: %v allocations, want 0", allocs)
	}
}

func FuzzDecodePong(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p, p2 Pong
		if !testutil.Decodes(t, b, p.Decode) {
			return
		}
		if p.NumFields < MinFields || p.NumFields > MaxFields {
			t.Fatalf("%d fields: outside [%d, %d]", p.NumFields, MinFields, MaxFields)
		}
		for _, i := range []int{FieldProtocol, FieldOnline, FieldMax} {
			if n, ok := Number(p.Fields[i]); !ok || n < 0 || n > MaxNumber {
				t.Fatalf("field %d %q decoded but is not a number", i, p.Fields[i])
			}
		}
		if u := AppendUnescaped(nil, p.Fields[FieldMOTD]); len(u) > len(p.Fields[FieldMOTD]) {
			t.Fatalf("unescaped %q longer than %q", u, p.Fields[FieldMOTD])
		}
		out, err := p.AppendTo(nil)
		if err != nil {
			t.Fatalf("a decoded pong does not encode: %v", err)
		}
		if err := p2.Decode(out); err != nil {
			t.Fatalf("re-decode of %x: %v", out, err)
		}
		if fields(&p) != fields(&p2) || p.Time != p2.Time || p.ServerGUID != p2.ServerGUID {
			t.Fatalf("round trip changed the pong:\n%q\n%q", fields(&p), fields(&p2))
		}
	})
}

func FuzzDecodePing(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p, p2 Ping
		if !testutil.Decodes(t, b, p.Decode) {
			return
		}
		out := p.AppendTo(nil)
		if !bytes.Equal(out, b[:PingLen]) {
			t.Fatalf("re-encoded %x, want %x", out, b[:PingLen])
		}
		if err := p2.Decode(out); err != nil || p != p2 {
			t.Fatalf("round trip: %+v, %v; want %+v", p2, err, p)
		}
	})
}

func BenchmarkDecodePong(b *testing.B) {
	for _, name := range []string{"pong-bedrock-protocol", "pong-bds", "pong-minimal"} {
		v := testutil.Vectors(b)[name].Bytes
		b.Run(name, func(b *testing.B) {
			var p Pong
			b.ReportAllocs()
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				if err := p.Decode(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendPing(b *testing.B) {
	p := Ping{Time: 1, ClientGUID: 2}
	buf := make([]byte, 0, PingLen)
	b.ReportAllocs()
	b.SetBytes(int64(PingLen))
	for b.Loop() {
		buf = p.AppendTo(buf[:0])
	}
}

// BenchmarkBaselineSplit is what the pong decode is measured against in
// the same run: the common way of reading the advertisement (GameDig's,
// minecraft-server-util's), the text copied into a string and split at
// every semicolon.
func BenchmarkBaselineSplit(b *testing.B) {
	for _, name := range []string{"pong-bedrock-protocol", "pong-bds", "pong-minimal"} {
		v := testutil.Vectors(b)[name].Bytes
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				if len(strings.Split(string(v[PongHeaderLen:]), ";")) < MinFields {
					b.Fatal("too few fields")
				}
			}
		})
	}
}
