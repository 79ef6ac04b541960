package fivem

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestDecodeVectors(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		t.Run(name, func(t *testing.T) {
			var i Info
			var p Players
			decode := i.Decode
			if strings.HasSuffix(v.Kind, "players") {
				decode = p.Decode
			}
			ok := testutil.Decodes(t, v.Bytes, decode)
			if want := !strings.HasPrefix(v.Kind, "bad"); ok != want {
				t.Fatalf("decoded %v, want %v", ok, want)
			}
		})
	}
	var i Info
	if err := i.Decode(testutil.Vectors(t)["info"].Bytes); err != nil || i.Version != float64(1386442478) || !i.HasVersion {
		t.Errorf("info: version %v %v (%v)", i.Version, i.HasVersion, err)
	}
	var p Players
	if err := p.Decode(testutil.Vectors(t)["players"].Bytes); err != nil {
		t.Fatal(err)
	}
	want := []Player{{Name: "Niko Bellic", Ping: float64(42), HasPing: true}, {Name: "Franklin É", Ping: float64(87), HasPing: true}}
	if !reflect.DeepEqual(p.List, want) {
		t.Errorf("players: got %+v, want %+v", p.List, want)
	}
}

// Every prefix of a document is refused cleanly.
func TestDecodeTruncated(t *testing.T) {
	vs := testutil.Vectors(t)
	for _, name := range []string{"info", "players"} {
		b := vs[name].Bytes
		var i Info
		var p Players
		decode := i.Decode
		if name == "players" {
			decode = p.Decode
		}
		for n := range len(b) {
			if testutil.Decodes(t, b[:n], decode) {
				t.Fatalf("%s cut to %d of %d bytes decoded", name, n, len(b))
			}
		}
	}
}

func TestDecodeBounds(t *testing.T) {
	var p Players
	b := []byte("[" + strings.Repeat(`{"name":"p","ping":1},`, MaxPlayers) + `{"name":"p"}]`)
	if err := p.Decode(b); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d players: got %v, want ErrTooLong", MaxPlayers+1, err)
	}
	var i Info
	if err := i.Decode(make([]byte, MaxSize+1)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("a document over MaxSize: got %v, want ErrTooLong", err)
	}
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p, p2 Players
		if testutil.Decodes(t, b, p.Decode) {
			if len(p.List) > MaxPlayers {
				t.Fatalf("%d players: past the bound", len(p.List))
			}
			out, err := json.Marshal(p.Doc)
			if err != nil || p2.Decode(out) != nil || fmt.Sprint(p.List) != fmt.Sprint(p2.List) {
				t.Fatalf("re-encoded players decode differently: %v", err)
			}
		}
		var i, i2 Info
		if testutil.Decodes(t, b, i.Decode) {
			out, err := json.Marshal(i.Doc)
			if err != nil || i2.Decode(out) != nil || !reflect.DeepEqual(i, i2) {
				t.Fatalf("re-encoded info decodes differently: %v", err)
			}
		}
	})
}
