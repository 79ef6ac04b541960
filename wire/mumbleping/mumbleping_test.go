package mumbleping

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestDecodeMurmur(t *testing.T) {
	v := testutil.Vectors(t)
	var p Pong
	if err := p.Decode(v["pong-murmur-1.3.4"].Bytes); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d.%d.%d ident %x users %d/%d bandwidth %d", p.Major(), p.Minor(), p.Patch(), p.Ident, p.Users, p.MaxUsers, p.Bandwidth)
	if want := "1.3.4 ident 102030405060708 users 0/17 bandwidth 72000"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	var ping Ping
	if err := ping.Decode(v["ping-gamedig"].Bytes); err != nil || ping.Ident != 0x0102030405060708 {
		t.Errorf("ping: got %x, %v", ping.Ident, err)
	}
	if id, ok := PongIdent(v["pong-murmur-1.3.4"].Bytes); !ok || id != ping.Ident {
		t.Errorf("PongIdent: got %x, %v; want the ping's %x", id, ok, ping.Ident)
	}
	if _, ok := PongIdent(v["bad-pong-short"].Bytes); ok {
		t.Error("PongIdent of a short pong: ok, want not")
	}
	if p.Decode(v["pong-1.5"].Bytes) != nil || p.Major() != 1 || p.Minor() != 5 || p.Patch() != 0x7a || p.MaxUsers != 50 {
		t.Errorf("pong-1.5: got %+v", p)
	}
}

func TestAppendPing(t *testing.T) {
	got, _ := (&Ping{Ident: 0x0102030405060708}).AppendTo(nil)
	if want := testutil.Vectors(t)["ping-gamedig"].Bytes; string(got) != string(want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var err error
			if strings.HasPrefix(name, "bad-ping") {
				err = new(Ping).Decode(v.Bytes)
			} else {
				err = new(Pong).Decode(v.Bytes)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *wire.DecodeError", err)
			}
		})
	}
}

// Every prefix of a valid message is refused as truncated.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		for n := 0; n < len(v.Bytes) && v.Kind != "bad"; n++ {
			var err error
			if v.Kind == "ping" {
				err = new(Ping).Decode(v.Bytes[:n])
			} else {
				err = new(Pong).Decode(v.Bytes[:n])
			}
			if !errors.Is(err, wire.ErrTruncated) {
				t.Fatalf("%s[:%d]: got %v, want ErrTruncated", name, n, err)
			}
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := testutil.Vectors(t)["pong-murmur-1.3.4"].Bytes
	var p Pong
	if n := testing.AllocsPerRun(100, func() { _ = p.Decode(b) }); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

func BenchmarkDecodePong(b *testing.B) {
	in := testutil.Vectors(b)["pong-murmur-1.3.4"].Bytes
	testutil.BenchDecode(b, in, new(Pong).Decode)
}

func FuzzDecodePong(f *testing.F) {
	vs := testutil.SeedVectors(f)
	other := vs["pong-1.5"].Bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := testutil.RoundTrip(t, b, new(Pong), other, func(p *Pong) string { return fmt.Sprintf("%+v", *p) })
		if _, ok := PongIdent(b); ok != (err == nil) {
			t.Fatalf("PongIdent ok %v, Decode error %v", ok, err)
		}
	})
}

func FuzzDecodePing(f *testing.F) {
	vs := testutil.SeedVectors(f)
	other := vs["ping-gamedig"].Bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		testutil.RoundTrip(t, b, new(Ping), other, func(p *Ping) string { return fmt.Sprintf("%+v", *p) })
	})
}
