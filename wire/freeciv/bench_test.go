package freeciv

import (
	"compress/zlib"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// drainAll takes every whole frame the splitter holds, failing tb on an
// error.
func drainAll(tb testing.TB, s *Splitter) {
	for {
		_, err := s.Next()
		if errors.Is(err, ErrNeedMore) {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSplitter cuts a stream of typical game packets arriving one TCP
// segment at a time.
func BenchmarkSplitter(b *testing.B) {
	stream := typicalStream(b, 2000)
	var s Splitter
	s.SetTypeWidth(2)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		for p := stream; len(p) > 0; {
			n := min(len(p), 1460)
			if _, err := s.Write(p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
			drainAll(b, &s)
		}
	}
}

// BenchmarkSplitterChunk measures decompression through the splitter: a
// chunk of about 48 KiB of typical packets. Bytes are decompressed bytes.
func BenchmarkSplitterChunk(b *testing.B) {
	inner := typicalStream(b, 680)
	chunk, err := AppendCompressedChunk(nil, inner, zlib.DefaultCompression)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d packet bytes in a %d-byte chunk", len(inner), len(chunk))
	var s Splitter
	s.SetTypeWidth(2)
	b.ReportAllocs()
	b.SetBytes(int64(len(inner)))
	for b.Loop() {
		if _, err := s.Write(chunk); err != nil {
			b.Fatal(err)
		}
		drainAll(b, &s)
	}
}

// BenchmarkDecompress is the same chunk through Decompress, whole.
func BenchmarkDecompress(b *testing.B) {
	inner := typicalStream(b, 680)
	chunk, err := AppendCompressedChunk(nil, inner, zlib.DefaultCompression)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, 0, len(inner)+1)
	b.ReportAllocs()
	b.SetBytes(int64(len(inner)))
	for b.Loop() {
		if out, err = Decompress(out, chunk[chunkHeaderLen:], 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendChunk compresses the same packets with a reused
// Compressor.
func BenchmarkAppendChunk(b *testing.B) {
	inner := typicalStream(b, 680)
	c, err := NewCompressor(zlib.DefaultCompression)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, 0, len(inner))
	b.ReportAllocs()
	b.SetBytes(int64(len(inner)))
	for b.Loop() {
		if out, err = c.AppendChunk(out[:0], inner); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeltaDecode(b *testing.B) {
	b.Run("vector", func(b *testing.B) {
		body := deltaBody(b, "delta-update")
		dst, err := deltaSpec.Decode(nil, deltaFirst, body)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if dst, err = deltaSpec.Decode(dst, deltaFirst, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rich", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(13, 14))
		prev := randomValues(rng, &richSpec)
		cur := mutate(rng, &richSpec, prev)
		body, err := richSpec.Encode(nil, prev, cur)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := richSpec.Decode(nil, prev, body)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if dst, err = richSpec.Decode(dst, prev, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDeltaEncode(b *testing.B) {
	out := make([]byte, 0, 64)
	b.ReportAllocs()
	var err error
	for b.Loop() {
		if out, err = deltaSpec.Encode(out[:0], deltaFirst, deltaUpdate); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(out)))
}

func BenchmarkPlausibleJoinReq(b *testing.B) {
	in := testutil.Vectors(b)["join-req-probe"].Bytes
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if ok, _ := PlausibleJoinReq(in); !ok {
			b.Fatal("implausible")
		}
	}
}
