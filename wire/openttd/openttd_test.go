package openttd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestAppendRequest(t *testing.T) {
	if got, want := AppendRequest(nil), testutil.Vectors(t)["request"].Bytes; string(got) != string(want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

func date(days uint32) string {
	y, m, d := Date(days)
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
}

func TestDecodeOpenTTD13(t *testing.T) {
	b := testutil.Vectors(t)["info-openttd-13.0"].Bytes
	if size, typ, ok := PacketSize(b); !ok || size != len(b) || typ != TypeServerGameInfo {
		t.Errorf("PacketSize: got %d, %d, %v", size, typ, ok)
	}
	var g GameInfo
	if err := g.Decode(b); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("v%d %q %q pw=%v clients %d/%d spec %d companies %d/%d map %dx%d land %d ded %v dates %s %s gs %x %q grfs %d",
		g.InfoVersion, g.Name, g.Revision, g.Password, g.NumClients, g.MaxClients, g.NumSpectators, g.NumCompanies, g.MaxCompanies,
		g.MapWidth, g.MapHeight, g.Landscape, g.Dedicated, date(g.CalendarDate), date(g.StartDate), g.GameScriptVersion, g.GameScriptName, len(g.GRFs))
	want := `v6 "Unnamed Server" "13.0" pw=false clients 0/25 spec 0 companies 0/15 map 256x256 land 0 ded true dates 1950-01-04 1950-01-01 gs ffffffff "" grfs 0`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeVersions(t *testing.T) {
	v := testutil.Vectors(t)
	var g GameInfo
	if err := g.Decode(v["info-v7-built"].Bytes); err != nil {
		t.Fatal(err)
	}
	if g.TicksPlaying != 123456 || len(g.GRFs) != 1 || string(g.GRFs[0].Name) != "OpenGFX+ Trains" || g.GRFs[0].ID != 0x4e4d0101 ||
		g.GRFs[0].MD5[15] != 15 || string(g.GameScriptName) != "AdminGS" || !g.Password || g.NumClients != 3 || g.Landscape != 1 {
		t.Errorf("v7: got %+v", g)
	}
	if err := g.Decode(v["info-v4-built"].Bytes); err != nil {
		t.Fatal(err)
	}
	if len(g.GRFs) != 1 || g.GRFs[0].HasName || string(g.MapName) != "Random Map" || g.Language != 1 || g.TicksPlaying != 0 {
		t.Errorf("v4: got %+v", g)
	}
	if err := g.Decode(v["info-v1-built"].Bytes); err != nil {
		t.Fatal(err)
	}
	if date(g.CalendarDate) != "1950-01-01" || string(g.MapName) != "Map" || g.MaxCompanies != 0 || len(g.GRFs) != 0 {
		t.Errorf("v1: got %+v, date %s", g, date(g.CalendarDate))
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var de *wire.DecodeError
			if err := new(GameInfo).Decode(v.Bytes); !errors.As(err, &de) {
				t.Fatalf("got %v, want a *wire.DecodeError", err)
			}
		})
	}
}

// Every prefix of a valid answer is refused: its declared size is longer.
// The same prefix with its size set to its length is refused too, as
// truncated (or, cut right after a whole field, as missing the rest).
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "info" {
			continue
		}
		for n := 0; n < len(v.Bytes); n++ {
			prefix := append([]byte(nil), v.Bytes[:n]...)
			var g GameInfo
			var de *wire.DecodeError
			if err := g.Decode(prefix); !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
			if n >= 2 {
				prefix[0], prefix[1] = byte(n), byte(n>>8)
				if err := g.Decode(prefix); !errors.Is(err, wire.ErrTruncated) && (n > HeaderLen || !errors.As(err, &de)) {
					t.Fatalf("%s[:%d] with its size: got %v, want ErrTruncated", name, n, err)
				}
			}
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	v := testutil.Vectors(t)
	var g GameInfo
	for _, name := range []string{"info-openttd-13.0", "info-v7-built"} {
		b := v[name].Bytes
		_ = g.Decode(b) // grow the reused NewGRF list once
		if n := testing.AllocsPerRun(100, func() { _ = g.Decode(b) }); n != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, n)
		}
	}
}

func TestAppendToRefuses(t *testing.T) {
	for name, g := range map[string]GameInfo{
		"version 0":   {},
		"version 8":   {InfoVersion: 8},
		"lookup IDs":  {InfoVersion: 6, GRFSerialisation: GRFLookupID},
		"NUL in name": {InfoVersion: 6, Name: []byte("a\x00b")},
		"old date":    {InfoVersion: 1, CalendarDate: 1},
		"too long":    {InfoVersion: 6, Name: make([]byte, MaxPacketSize)},
	} {
		if b, err := g.AppendTo([]byte("x")); err == nil || string(b) != "x" {
			t.Errorf("%s: got %q, %v; want an error and b unchanged", name, b, err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	testutil.BenchDecode(b, testutil.Vectors(b)["info-openttd-13.0"].Bytes, new(GameInfo).Decode)
}

func FuzzDecode(f *testing.F) {
	vs := testutil.SeedVectors(f)
	other := vs["info-v7-built"].Bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		dump := func(g *GameInfo) string {
			d := *g
			if len(d.GRFs) == 0 {
				d.GRFs = nil
			}
			return fmt.Sprintf("%+v", d)
		}
		// Booleans read as any non-zero byte are written as 1: the codec
		// is canonical for what OpenTTD sends, so compare decodes.
		var g GameInfo
		if !testutil.Decodes(t, b, g.Decode) {
			return
		}
		out, err := g.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded answer does not encode: %v", err)
		}
		if g.Len() != len(b) {
			t.Fatalf("Len %d, input %d", g.Len(), len(b))
		}
		var back, reused GameInfo
		if err := back.Decode(out); err != nil || dump(&back) != dump(&g) {
			t.Fatalf("decode → encode → decode: %v\n%s\n%s", err, dump(&back), dump(&g))
		}
		_ = reused.Decode(other)
		if err := reused.Decode(b); err != nil || dump(&reused) != dump(&g) {
			t.Fatalf("decoding into a reused message: %v", err)
		}
	})
}
