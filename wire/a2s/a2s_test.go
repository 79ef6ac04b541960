package a2s

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

var reasons = map[string]error{
	"truncated": wire.ErrTruncated,
	"too-long":  wire.ErrTooLong,
	"range":     wire.ErrRange,
	"magic":     wire.ErrMagic,
	"type":      ErrType,
	"split":     ErrSplit,
	"checksum":  ErrChecksum,

	"concatenated": ErrConcatenated,
}

var layouts = map[string]Layout{
	"source":         LayoutSource,
	"source_no_size": LayoutSourceNoSize,
	"goldsrc":        LayoutGoldSrc,
}

// codec decodes b as kind and re-encodes it.
func codec(kind string, b []byte) (out []byte, err error) {
	switch kind {
	case "request":
		var q Request
		if err = q.Decode(b); err == nil {
			out, err = q.AppendTo(nil)
		}
	case "challenge":
		var c int32
		if c, err = DecodeChallenge(b); err == nil {
			out = AppendChallenge(nil, c)
		}
	case "info":
		var m Info
		if err = m.Decode(b); err == nil {
			out, err = m.AppendTo(nil)
		}
	case "players":
		var m Players
		if err = m.Decode(b); err == nil {
			out, err = m.AppendTo(nil)
		}
	case "rules":
		var m Rules
		if err = m.Decode(b); err == nil {
			out, err = m.AppendTo(nil)
		}
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	return out, err
}

func TestVectors(t *testing.T) {
	vs := testutil.ReadVectors(t, "testdata/vectors.txt")
	messages := map[string][]byte{}
	fragments := map[string][][]byte{}
	fragmentKind := map[string]string{}
	for _, v := range vs {
		if base, _, ok := strings.Cut(v.Name, "."); ok {
			fragments[base] = append(fragments[base], v.Bytes)
			fragmentKind[base] = v.Kind
			continue
		}
		messages[v.Name] = v.Bytes
		t.Run(v.Name, func(t *testing.T) {
			kind, reason, bad := strings.Cut(v.Kind, ":")
			kind = strings.TrimPrefix(kind, "bad-")
			out, err := codec(kind, v.Bytes)
			if bad {
				want := reasons[reason]
				var de *wire.DecodeError
				if !errors.Is(err, want) || !errors.As(err, &de) {
					t.Fatalf("got %v, want a *wire.DecodeError wrapping %v", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if !bytes.Equal(out, v.Bytes) {
				t.Fatalf("re-encoded:\n got %x\nwant %x", out, v.Bytes)
			}
			// Every proper prefix is refused cleanly.
			for n := 0; n < len(v.Bytes); n++ {
				if kind == "info" && n > 0 && isInfoWithoutEDF(v.Bytes, n) {
					continue // the EDF byte is optional: an answer ending before it is whole
				}
				if kind == "request" && n == InfoRequestLen && len(v.Bytes) == InfoRequestLen+4 {
					continue // an A2S_INFO request without its challenge is one too
				}
				if kind == "request" && n == HeaderLen && v.Bytes[4] == byte(TypeChallengeRequest) {
					continue // so is a legacy challenge request
				}
				if _, err := codec(kind, v.Bytes[:n]); err == nil {
					t.Fatalf("prefix of %d bytes: got nil, want an error", n)
				}
			}
		})
	}
	for base, frs := range fragments {
		t.Run(base, func(t *testing.T) {
			parts := strings.Split(fragmentKind[base], ":")
			bad := parts[0] == "bad-fragment"
			for _, layout := range []Layout{layouts[parts[1]], LayoutAuto} {
				r := Reassembler{Layout: layout}
				var complete bool
				var err error
				for i, f := range frs {
					complete, err = r.Add(f)
					if err != nil {
						break
					}
					if complete != (i == len(frs)-1) {
						t.Fatalf("%v: fragment %d: complete %v", layout, i, complete)
					}
				}
				if bad {
					if want := reasons[parts[2]]; !errors.Is(err, want) {
						t.Fatalf("%v: got %v, want %v", layout, err, want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%v: got %v", layout, err)
				}
				if got := r.Message(); !bytes.Equal(got, messages["rules-big"]) {
					t.Fatalf("%v: reassembled %d bytes, want rules-big (%d bytes)", layout, len(got), len(messages["rules-big"]))
				}
				if r.SplitLayout() != layouts[parts[1]] {
					t.Fatalf("%v: detected layout %v, want %v", layout, r.SplitLayout(), parts[1])
				}
				var rules Rules
				if err := rules.Decode(r.Message()); err != nil || len(rules.Rules) != 90 {
					t.Fatalf("%v: decoded %d rules, err %v", layout, len(rules.Rules), err)
				}
			}
		})
	}
}

// isInfoWithoutEDF reports whether b[:n] ends right after a Source info
// answer's version string.
func isInfoWithoutEDF(b []byte, n int) bool {
	var m Info
	return b[4] == byte(TypeInfo) && m.Decode(b[:n]) == nil && m.EDF == 0 && b[n-1] == 0
}

// TestSplitRoundTrip cuts messages with Splitter and reassembles them in
// every layout, in reverse order, with and without compression.
func TestSplitRoundTrip(t *testing.T) {
	vs := testutil.ReadVectors(t, "testdata/vectors.txt")
	var big, compressed []byte
	var size, crc uint32
	for _, v := range vs {
		if v.Name == "rules-big" {
			big = v.Bytes
		}
	}
	// The compressed payload of the bz2 vector, taken from its fragments.
	var r Reassembler
	for _, v := range vs {
		if strings.HasPrefix(v.Name, "rules-big-bz2.") {
			if _, err := r.Add(v.Bytes); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, size, crc, ok := r.Compressed()
	if !ok || size != uint32(len(big)) || crc != crc32.ChecksumIEEE(big) {
		t.Fatalf("Compressed: ok %v size %d crc %#x", ok, size, crc)
	}
	compressed = bytes.Clone(data)
	for _, l := range []Layout{LayoutSource, LayoutSourceNoSize, LayoutGoldSrc} {
		for _, comp := range []bool{false, true} {
			if comp && l == LayoutGoldSrc {
				continue
			}
			t.Run(fmt.Sprintf("%v/compressed=%v", l, comp), func(t *testing.T) {
				s := Splitter{Layout: l, MaxPayload: 400}
				id, payload := uint32(77), big
				if comp {
					id, payload = 77|CompressedFlag, compressed
				}
				frs, err := s.Split(nil, id, payload, size, crc)
				if err != nil {
					t.Fatal(err)
				}
				for _, auto := range []bool{false, true} {
					r := Reassembler{Layout: l}
					if auto {
						r.Layout = LayoutAuto
					}
					var complete bool
					for i := len(frs) - 1; i >= 0; i-- {
						if complete, err = r.Add(frs[i]); err != nil {
							t.Fatal(err)
						}
					}
					if !complete || !bytes.Equal(r.Message(), big) {
						t.Fatalf("auto=%v: complete %v, %d bytes", auto, complete, len(r.Message()))
					}
				}
			})
		}
	}
	if _, err := (Splitter{Layout: LayoutGoldSrc, MaxPayload: 100}).Split(nil, 1, big, 0, 0); !errors.Is(err, wire.ErrTooLong) {
		t.Fatalf("GoldSrc split into more than 15: got %v, want ErrTooLong", err)
	}
}

// TestReassemblerBounds checks the limits: fragments, message size and
// decompressed size.
func TestReassemblerBounds(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, 5000)
	msg := append([]byte{0xFF, 0xFF, 0xFF, 0xFF, 'E'}, big...)
	frs, err := Splitter{Layout: LayoutSource, MaxPayload: 100}.Split(nil, 5, msg, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("packets", func(t *testing.T) {
		r := Reassembler{Layout: LayoutAuto, MaxPackets: 10}
		var err error
		for _, f := range frs {
			if _, err = r.Add(f); err != nil {
				break
			}
		}
		if !errors.Is(err, wire.ErrTooLong) {
			t.Fatalf("got %v, want ErrTooLong", err)
		}
	})
	t.Run("size", func(t *testing.T) {
		r := Reassembler{MaxMessage: 1000}
		var err error
		for _, f := range frs {
			if _, err = r.Add(f); err != nil {
				break
			}
		}
		if !errors.Is(err, wire.ErrTooLong) {
			t.Fatalf("got %v, want ErrTooLong", err)
		}
	})
	t.Run("single", func(t *testing.T) {
		r := Reassembler{MaxMessage: 1000}
		if _, err := r.Add(msg); !errors.Is(err, wire.ErrTooLong) {
			t.Fatalf("got %v, want ErrTooLong", err)
		}
	})
	t.Run("decompressed", func(t *testing.T) {
		// A compressed message announcing more than MaxMessage is refused
		// before anything is decompressed.
		vs := testutil.ReadVectors(t, "testdata/vectors.txt")
		r := Reassembler{MaxMessage: 2000}
		var err error
		for _, v := range vs {
			if strings.HasPrefix(v.Name, "rules-big-bz2.") {
				if _, err = r.Add(v.Bytes); err != nil {
					break
				}
			}
		}
		if !errors.Is(err, wire.ErrRange) && !errors.Is(err, wire.ErrTooLong) {
			t.Fatalf("got %v, want a range error", err)
		}
	})
	t.Run("other-id-ignored", func(t *testing.T) {
		var r Reassembler
		stray, _ := Splitter{Layout: LayoutSource}.Split(nil, 99, msg[:50], 0, 0)
		if _, err := r.Add(frs[1]); err != nil {
			t.Fatal(err)
		}
		if c, err := r.Add(stray[0]); c || err != nil {
			t.Fatalf("stray fragment: complete %v err %v", c, err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		var r Reassembler
		for round := 0; round < 2; round++ {
			var c bool
			for _, f := range frs {
				if c, err = r.Add(f); err != nil {
					t.Fatal(err)
				}
			}
			if !c || !bytes.Equal(r.Message(), msg) {
				t.Fatalf("round %d: complete %v", round, c)
			}
			r.Reset()
		}
	})
}

// TestDecodeAllocs proves the single-datagram decoders allocate nothing
// once the structs they fill have grown.
func TestDecodeAllocs(t *testing.T) {
	vs := testutil.ReadVectors(t, "testdata/vectors.txt")
	get := func(name string) []byte {
		for _, v := range vs {
			if v.Name == name {
				return v.Bytes
			}
		}
		t.Fatalf("no vector %q", name)
		return nil
	}
	info, players, rules, req := get("info-source-edf"), get("players"), get("rules"), get("info-request-challenge")
	var (
		mi Info
		mp Players
		mr Rules
		q  Request
		r  Reassembler
	)
	buf := make([]byte, 0, 512)
	run := func() {
		if mi.Decode(info) != nil || mp.Decode(players) != nil || mr.Decode(rules) != nil || q.Decode(req) != nil {
			panic("decode failed")
		}
		if _, err := DecodeChallenge(get("challenge")); err != nil {
			panic(err)
		}
		r.Reset()
		if c, err := r.Add(rules); !c || err != nil {
			panic("reassembler")
		}
		buf, _ = mi.AppendTo(buf[:0])
		buf, _ = mp.AppendTo(buf[:0])
		buf, _ = q.AppendTo(buf[:0])
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Fatalf("got %v allocations per run, want 0", a)
	}
}

func TestLayoutFor(t *testing.T) {
	for _, c := range []struct {
		app   uint16
		proto byte
		want  Layout
	}{{10, 48, LayoutGoldSrc}, {70, 48, LayoutGoldSrc}, {215, 7, LayoutSourceNoSize}, {240, 7, LayoutSourceNoSize},
		{240, 17, LayoutSource}, {730, 17, LayoutSource}, {17550, 7, LayoutSourceNoSize}, {17700, 7, LayoutSourceNoSize}} {
		if got := LayoutFor(c.app, c.proto); got != c.want {
			t.Errorf("LayoutFor(%d, %d): got %v, want %v", c.app, c.proto, got, c.want)
		}
	}
}

func TestEncodeRefusesNUL(t *testing.T) {
	m := Info{Name: []byte("a\x00b")}
	if _, err := m.AppendTo(nil); !errors.Is(err, wire.ErrRange) {
		t.Fatalf("got %v, want ErrRange", err)
	}
	p := Players{Players: make([]Player, 256)}
	if _, err := p.AppendTo(nil); !errors.Is(err, wire.ErrRange) {
		t.Fatalf("got %v, want ErrRange", err)
	}
}

// TestConcatenatedStreamAllocs reassembles a compressed one-fragment
// answer whose bzip2 data are two streams, the second declaring level 9:
// it must be refused without the decoder sizing a block buffer for the
// second stream (3.6 MB). A single stream of the same size is bounded to
// level 1 (0.4 MB), which the bound leaves room for.
func TestConcatenatedStreamAllocs(t *testing.T) {
	var frag []byte
	for _, v := range testutil.ReadVectors(t, "testdata/vectors.txt") {
		if v.Name == "bad-concat.0" {
			frag = v.Bytes
		}
	}
	if frag == nil {
		t.Fatal("no bad-concat.0 vector")
	}
	const runs = 5
	const bound = 1 << 20 // bytes allocated per answer
	var err error
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		var r Reassembler
		_, err = r.Add(frag)
	}
	runtime.ReadMemStats(&after)
	perRun := (after.TotalAlloc - before.TotalAlloc) / runs
	var de *wire.DecodeError
	if !errors.Is(err, ErrConcatenated) || !errors.As(err, &de) {
		t.Errorf("got %v, want a *wire.DecodeError wrapping ErrConcatenated", err)
	}
	if perRun > bound {
		t.Errorf("a %d-byte answer allocated %d bytes, want at most %d", len(frag), perRun, bound)
	}
	t.Logf("a %d-byte answer of two streams: %d bytes allocated, %v", len(frag), perRun, err)
}

func TestLooksLikeRequest(t *testing.T) {
	info, _ := (&Request{Type: TypeInfoRequest, HasChallenge: true, Challenge: 7}).AppendTo(nil)
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"A2S_INFO", info, true},
		{"A2S_PLAYER", []byte{0xFF, 0xFF, 0xFF, 0xFF, 'U', 0xFF, 0xFF, 0xFF, 0xFF}, true},
		{"A2S_RULES", []byte{0xFF, 0xFF, 0xFF, 0xFF, 'V', 1, 2, 3, 4}, true},
		{"challenge request", []byte{0xFF, 0xFF, 0xFF, 0xFF, 'W'}, true},
		{"header only", []byte{0xFF, 0xFF, 0xFF, 0xFF}, false},
		{"split header", []byte{0xFE, 0xFF, 0xFF, 0xFF, 'T'}, false},
		{"an answer", []byte{0xFF, 0xFF, 0xFF, 0xFF, 'I', 17}, false},
		{"longer than MaxRequest", append(append([]byte(nil), info...), make([]byte, MaxRequest)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksLikeRequest(tc.in); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
