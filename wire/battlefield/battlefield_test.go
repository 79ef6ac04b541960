package battlefield

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestRequests(t *testing.T) {
	v := testutil.Vectors(t)
	for name, words := range map[string][]string{
		"request-serverinfo":  {"serverInfo"},
		"request-listplayers": {"listPlayers", "all"},
	} {
		got, err := AppendRequest(nil, 0, words...)
		if err != nil || !bytes.Equal(got, v[name].Bytes) {
			t.Errorf("%s: got %x (%v), want %x", name, got, err, v[name].Bytes)
		}
	}
}

func TestDecodeServerInfo(t *testing.T) {
	var p Packet
	if err := p.Decode(testutil.Vectors(t)["response-serverinfo"].Bytes); err != nil {
		t.Fatal(err)
	}
	if p.Sequence != 1 || !p.Response || p.FromServer {
		t.Errorf("header: got sequence %d response %v from server %v, want 1 true false", p.Sequence, p.Response, p.FromServer)
	}
	if len(p.Words) != 24 || string(p.Words[0]) != "OK" || string(p.Words[1]) != "Gate BF4" || len(p.Words[12]) != 0 || string(p.Words[23]) != "NL" {
		t.Errorf("words: got %q", p.Words)
	}
}

func TestDecodeEvent(t *testing.T) {
	var p Packet
	if err := p.Decode(testutil.Vectors(t)["event"].Bytes); err != nil {
		t.Fatal(err)
	}
	if p.Sequence != 7 || p.Response || !p.FromServer || string(p.Words[0]) != "player.onJoin" {
		t.Errorf("got %+v", p)
	}
}

func TestDecodeBad(t *testing.T) {
	n := 0
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad" {
			continue
		}
		n++
		var p Packet
		var de *wire.DecodeError
		if err := p.Decode(v.Bytes); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
	if n < 7 {
		t.Errorf("%d bad vectors, want 7", n)
	}
}

func TestSize(t *testing.T) {
	b := testutil.Vectors(t)["response-listplayers"].Bytes
	if n, err := Size(b[:PrefixLen], 0); err != nil || n != len(b) {
		t.Errorf("Size: got %d %v, want %d", n, err, len(b))
	}
	if _, err := Size(b[:PrefixLen], len(b)-1); !errors.Is(err, ErrSize) {
		t.Errorf("Size under a limit below the packet: got %v, want ErrSize", err)
	}
	huge := []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if _, err := Size(huge, 0); !errors.Is(err, ErrSize) {
		t.Errorf("Size of a 4 GiB packet: got %v, want ErrSize", err)
	}
	if _, err := Size(b[:PrefixLen-1], 0); !errors.Is(err, wire.ErrTruncated) {
		t.Errorf("Size of a short prefix: got %v, want ErrTruncated", err)
	}
}

func TestDecodeBounds(t *testing.T) {
	var p Packet
	b := appendU32(appendU32(appendU32(nil, 0), 0), MaxWords+1)
	b = append(b, make([]byte, 5*(MaxWords+1))...)
	copy(b[4:], appendU32(nil, uint32(len(b))))
	if err := p.Decode(b); !errors.Is(err, wire.ErrRange) {
		t.Errorf("%d words: got %v, want ErrRange", MaxWords+1, err)
	}
	if _, err := (&Packet{Words: make([][]byte, MaxWords+1)}).AppendTo(nil); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("encoding %d words: got %v, want ErrTooLong", MaxWords+1, err)
	}
	if _, err := (&Packet{Words: [][]byte{[]byte("a\x00b")}}).AppendTo(nil); !errors.Is(err, wire.ErrRange) {
		t.Errorf("encoding a word with a NUL: got %v, want ErrRange", err)
	}
}

// Every prefix of a packet is rejected with a *wire.DecodeError: its size
// field says what is missing.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind == "bad" {
			continue
		}
		for n := range len(v.Bytes) {
			var p Packet
			var de *wire.DecodeError
			if err := p.Decode(v.Bytes[:n]); !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, v := range testutil.Vectors(t) {
		if v.Kind == "bad" {
			continue
		}
		var p Packet
		if err := p.Decode(v.Bytes); err != nil {
			t.Fatal(err)
		}
		testutil.Reencodes(t, v.Bytes, p.AppendTo)
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := testutil.Vectors(t)["response-listplayers"].Bytes
	var p Packet
	_ = p.Decode(b)
	if n := testing.AllocsPerRun(100, func() { _ = p.Decode(b) }); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	in := testutil.Vectors(b)["response-listplayers"].Bytes
	var p Packet
	testutil.BenchDecode(b, in, p.Decode)
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p, p2 Packet
		if !testutil.Decodes(t, b, p.Decode) {
			return
		}
		if len(p.Words) > MaxWords {
			t.Fatalf("%d words: past the bound", len(p.Words))
		}
		out, err := p.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded packet does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("decode → encode changed the packet:\n%x\n%x", b, out)
		}
		if err := p2.Decode(out); err != nil || fmt.Sprint(p) != fmt.Sprint(p2) {
			t.Fatalf("re-decode: %v\n%v\n%v", err, p, p2)
		}
	})
}
