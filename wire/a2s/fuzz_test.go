package a2s

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// FuzzDecode feeds one datagram to every message decoder. None may panic;
// every error is a *wire.DecodeError; whatever decodes re-encodes to bytes
// that decode to the same encoding (a fixed point: trailing bytes are
// ignored, so the first encoding may be shorter than the input).
func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, kind := range []string{"request", "challenge", "info", "players", "rules"} {
			out, err := codec(kind, b)
			if kind == "request" && err == nil && len(b) <= MaxRequest && !LooksLikeRequest(b) {
				t.Fatalf("LooksLikeRequest refuses %x, which decodes", b)
			}
			if err != nil {
				var de *wire.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("%s: error %v is not a *wire.DecodeError", kind, err)
				}
				continue
			}
			again, err := codec(kind, out)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%s: re-encoding %x is not stable: %x, %v", kind, out, again, err)
			}
		}
	})
}

// FuzzReassemble cuts the input into datagrams at 0xFE 0xFF 0xFF 0xFF
// (split headers) and feeds them to Reassemblers of every layout, with
// small limits. None may panic or exceed its limits; a completed message
// never exceeds MaxMessage.
func FuzzReassemble(f *testing.F) {
	testutil.SeedVectors(f)
	// Whole split messages as seeds, fragments concatenated in file order.
	groups := map[string][]byte{}
	for _, v := range testutil.ReadVectors(f, testutil.VectorFile) {
		if base, _, ok := strings.Cut(v.Name, "."); ok {
			groups[base] = append(groups[base], v.Bytes...)
		}
	}
	for _, g := range groups {
		f.Add(g)
	}
	sep := []byte{0xFE, 0xFF, 0xFF, 0xFF}
	f.Fuzz(func(t *testing.T, b []byte) {
		var datagrams [][]byte
		for len(b) > 0 {
			i := bytes.Index(b[1:], sep)
			if i < 0 {
				datagrams = append(datagrams, b)
				break
			}
			datagrams = append(datagrams, b[:i+1])
			b = b[i+1:]
		}
		for _, l := range []Layout{LayoutAuto, LayoutSource, LayoutSourceNoSize, LayoutGoldSrc} {
			r := Reassembler{Layout: l, MaxPackets: 16, MaxMessage: 8 << 10}
			for _, d := range datagrams {
				complete, err := r.Add(d)
				if err != nil {
					break
				}
				if complete {
					if len(r.Message()) > 8<<10 {
						t.Fatalf("%v: message of %d bytes past the limit", l, len(r.Message()))
					}
					break
				}
			}
		}
	})
}

// FuzzDecompress feeds arbitrary bzip2 data and sizes to Decompress: it
// must never panic nor return more than size bytes.
func FuzzDecompress(f *testing.F) {
	var r Reassembler
	for _, v := range testutil.ReadVectors(f, "testdata/vectors.txt") {
		if strings.HasPrefix(v.Name, "rules-big-bz2.") {
			_, _ = r.Add(v.Bytes)
		}
		if v.Name == "bad-concat.0" {
			// Two concatenated streams, after the fragment's header, with
			// the size and CRC32 of both decompressed.
			f.Add(bytes.Clone(v.Bytes[20:]), uint32(19), uint32(0x40880b52))
		}
	}
	data, size, crc, _ := r.Compressed()
	f.Add(bytes.Clone(data), size, crc)
	f.Add([]byte("BZh91AY&SY"), uint32(10), uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, size, crc uint32) {
		size %= 16 << 10
		out, err := Decompress(nil, data, size, crc)
		if len(out) > int(size)+1 {
			t.Fatalf("decompressed %d bytes for a size of %d", len(out), size)
		}
		if err == nil && (len(out) != int(size)) {
			t.Fatalf("accepted %d bytes for a size of %d", len(out), size)
		}
	})
}
