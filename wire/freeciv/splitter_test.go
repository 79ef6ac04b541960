package freeciv

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// frame is a Frame copied out of the splitter's buffers, with the type width
// it was read with.
type frame struct {
	Width     int
	Type      uint16
	Body      string
	FromChunk bool
}

func (f frame) String() string {
	return fmt.Sprintf("{w%d %#x %q chunk=%v}", f.Width, f.Type, f.Body, f.FromChunk)
}

// drain calls Next until it needs more bytes, appending the frames to got.
// With manual set it switches the type width itself after an accepting
// JOIN_REPLY, as a caller without SwitchOnJoin does.
func drain(s *Splitter, got []frame, manual bool) ([]frame, error) {
	for {
		w := s.TypeWidth()
		f, err := s.Next()
		if errors.Is(err, ErrNeedMore) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, frame{w, f.Type, string(f.Body), f.FromChunk})
		if manual && w == 1 && f.Type == PacketServerJoinReply {
			var r JoinReply
			if r.Decode(f.Packet) == nil && r.YouCanJoin {
				if err := s.SetTypeWidth(2); err != nil {
					return got, err
				}
			}
		}
	}
}

// feed writes the stream cut at the given offsets, draining after each
// write, and returns every frame.
func feed(s *Splitter, stream []byte, cuts []int, manual bool) ([]frame, error) {
	var got []frame
	prev := 0
	for _, c := range append(cuts, len(stream)) {
		for p := stream[prev:c]; len(p) > 0; {
			n, werr := s.Write(p)
			p = p[n:]
			var err error
			if got, err = drain(s, got, manual); err != nil {
				return got, err
			}
			if werr != nil && !errors.Is(werr, ErrBufferFull) {
				return got, werr
			}
		}
		prev = c
	}
	return got, nil
}

func equalFrames(a, b []frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// joinStream is a short server-to-client stream crossing the join: a packet
// in the initial protocol, a chunk holding the accepting JOIN_REPLY with
// packets of both widths around it, then 2-byte-type packets, raw, in a
// jumbo and in a chunk built here.
func joinStream(t testing.TB) ([]byte, []frame) {
	vs := testutil.Vectors(t)
	var stream []byte
	stream = append(stream, vs["packet-width1"].Bytes...)
	stream = append(stream, vs["chunk-join"].Bytes...)
	stream = append(stream, vs["packet-width2"].Bytes...)
	stream = append(stream, vs["jumbo-small"].Bytes...)
	var inner []byte
	for i := range 5 {
		inner = append(inner, packet(t, 2, uint16(0x200+i), fmt.Sprintf("packet %d in a chunk", i))...)
	}
	chunk, err := AppendCompressedChunk(nil, inner, zlib.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	stream = append(stream, chunk...)
	stream = append(stream, packet(t, 2, 0x300, "last")...)

	reply := vs["join-reply-accept"].Bytes
	want := []frame{
		{1, 7, "hi", false},
		{1, 0, "", true},
		{1, PacketServerJoinReply, string(reply[3:]), true},
		{2, 1, "", true},
		{2, 0x123, "hello", true},
		{2, 0x102, "abc", false},
		{2, 0x102, "abc", true},
		{2, 0xffff, "", true},
	}
	for i := range 5 {
		want = append(want, frame{2, uint16(0x200 + i), fmt.Sprintf("packet %d in a chunk", i), true})
	}
	want = append(want, frame{2, 0x300, "last", false})
	return stream, want
}

func TestSplitterEveryBoundary(t *testing.T) {
	stream, want := joinStream(t)
	for _, mode := range []struct {
		name   string
		auto   bool
		manual bool
	}{{"SwitchOnJoin", true, false}, {"SetTypeWidth", false, true}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("whole", func(t *testing.T) {
				s := Splitter{SwitchOnJoin: mode.auto}
				got, err := feed(&s, stream, nil, mode.manual)
				if err != nil || !equalFrames(got, want) {
					t.Fatalf("got %v (%v), want %v", got, err, want)
				}
				if s.Buffered() != 0 || s.TypeWidth() != 2 {
					t.Fatalf("after the stream: got %d buffered, width %d, want 0, 2", s.Buffered(), s.TypeWidth())
				}
			})
			t.Run("two pieces at every boundary", func(t *testing.T) {
				for i := 1; i < len(stream); i++ {
					s := Splitter{SwitchOnJoin: mode.auto}
					got, err := feed(&s, stream, []int{i}, mode.manual)
					if err != nil || !equalFrames(got, want) {
						t.Fatalf("cut at %d: got %v (%v), want %v", i, got, err, want)
					}
				}
			})
			t.Run("one byte at a time", func(t *testing.T) {
				cuts := make([]int, 0, len(stream))
				for i := 1; i < len(stream); i++ {
					cuts = append(cuts, i)
				}
				s := Splitter{SwitchOnJoin: mode.auto}
				got, err := feed(&s, stream, cuts, mode.manual)
				if err != nil || !equalFrames(got, want) {
					t.Fatalf("got %v (%v), want %v", got, err, want)
				}
			})
			t.Run("random pieces", func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 2))
				for range 200 {
					cuts := randomCuts(rng, len(stream), 1+rng.IntN(8))
					s := Splitter{SwitchOnJoin: mode.auto}
					got, err := feed(&s, stream, cuts, mode.manual)
					if err != nil || !equalFrames(got, want) {
						t.Fatalf("cuts %v: got %v (%v), want %v", cuts, got, err, want)
					}
				}
			})
		})
	}
}

func randomCuts(rng *rand.Rand, n, k int) []int {
	cuts := make([]int, k)
	for i := range cuts {
		cuts[i] = rng.IntN(n + 1)
	}
	for i := 1; i < len(cuts); i++ { // insertion sort: k is small
		for j := i; j > 0 && cuts[j] < cuts[j-1]; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	return cuts
}

// The width switch applies to packets already buffered behind the reply,
// in the raw stream as inside a chunk.
func TestSplitterSwitchMidBuffer(t *testing.T) {
	vs := testutil.Vectors(t)
	accept, refuse := vs["join-reply-accept"].Bytes, vs["join-reply-refuse"].Bytes
	p1, p2 := vs["packet-width1"].Bytes, vs["packet-width2"].Bytes
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	chunk := func(parts ...[]byte) []byte {
		c, err := AppendCompressedChunk(nil, cat(parts...), zlib.DefaultCompression)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name   string
		auto   bool
		stream []byte
		want   []frame
	}{
		{"accept then packet, one read", true, cat(p1, accept, p2), []frame{
			{1, 7, "hi", false}, {1, 5, string(accept[3:]), false}, {2, 0x102, "abc", false}}},
		{"accept mid-chunk", true, chunk(p1, accept, p2, p2), []frame{
			{1, 7, "hi", true}, {1, 5, string(accept[3:]), true}, {2, 0x102, "abc", true}, {2, 0x102, "abc", true}}},
		{"accept ends a chunk", true, cat(chunk(p1, accept), p2), []frame{
			{1, 7, "hi", true}, {1, 5, string(accept[3:]), true}, {2, 0x102, "abc", false}}},
		{"refusal keeps the 1-byte type", true, cat(refuse, p1), []frame{
			{1, 5, string(refuse[3:]), false}, {1, 7, "hi", false}}},
		// Without the switch the 2-byte-type packet reads as type 1 with
		// body 02 "abc": the caller must switch.
		{"no switch misreads", false, cat(accept, p2), []frame{
			{1, 5, string(accept[3:]), false}, {1, 1, "\x02abc", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Splitter{SwitchOnJoin: tt.auto}
			got, err := feed(&s, tt.stream, nil, false)
			if err != nil || !equalFrames(got, tt.want) {
				t.Fatalf("got %v (%v), want %v", got, err, tt.want)
			}
		})
	}
	t.Run("SetTypeWidth refuses 3", func(t *testing.T) {
		var s Splitter
		if err := s.SetTypeWidth(3); !errors.Is(err, ErrTypeWidth) {
			t.Fatalf("got %v, want %v", err, ErrTypeWidth)
		}
	})
}

// A big jumbo, as a server sends when a game starts: incompressible packets
// force the jumbo form.
func TestSplitterJumbo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var inner []byte
	var want []frame
	for i := 0; len(inner) < 80<<10; i++ {
		body := make([]byte, rng.IntN(MaxLenPacket-4))
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		inner = append(inner, packet(t, 2, uint16(i), string(body))...)
		want = append(want, frame{2, uint16(i), string(body), true})
	}
	stream, err := AppendCompressedChunk(nil, inner, zlib.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint16(stream); got != JumboSize {
		t.Fatalf("length field: got %#x, want %#x", got, JumboSize)
	}
	if got, want := int(binary.BigEndian.Uint32(stream[2:])), len(stream); got != want {
		t.Fatalf("jumbo length: got %v, want %v", got, want)
	}
	for k := range 20 {
		cuts := randomCuts(rng, len(stream), k)
		s := Splitter{}
		s.SetTypeWidth(2)
		got, err := feed(&s, stream, cuts, false)
		if err != nil || !equalFrames(got, want) {
			t.Fatalf("cuts %v: got %d frames (%v), want %d", cuts, len(got), err, len(want))
		}
		// The buffer grown for the jumbo is released once empty.
		if _, err := s.Write(packet(t, 2, 1, "x")); err != nil {
			t.Fatal(err)
		}
		if cap(s.buf) > maxIdleBuffer {
			t.Fatalf("buffer after the jumbo: got capacity %d, want at most %d", cap(s.buf), maxIdleBuffer)
		}
	}
}

// AppendChunk picks the ordinary form exactly while its length field can
// hold 2 + compressed size + CompressionBorder, below JumboSize.
func TestAppendChunkBorder(t *testing.T) {
	c, err := NewCompressor(zlib.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	// Stored blocks make the compressed size grow with the input byte by
	// byte; find an input whose chunk is just below the border.
	base := 0
	for n := JumboBorder - 64; ; n++ {
		out, err := c.AppendChunk(nil, make([]byte, n))
		if err != nil {
			t.Fatal(err)
		}
		if binary.BigEndian.Uint16(out) == JumboSize {
			base = n - 4
			break
		}
	}
	for n := base; n < base+8; n++ {
		out, err := c.AppendChunk([]byte{0xAA}, make([]byte, n))
		if err != nil || out[0] != 0xAA {
			t.Fatalf("%d bytes: got %v, want the prefix kept and no error", n, err)
		}
		out = out[1:]
		length := int(binary.BigEndian.Uint16(out))
		var size int
		if length == JumboSize {
			size = int(binary.BigEndian.Uint32(out[2:])) - jumboHeaderLen
			if chunkHeaderLen+size < JumboBorder || len(out) != jumboHeaderLen+size {
				t.Fatalf("%d bytes: got a jumbo of %d compressed bytes in %d, want an ordinary chunk", n, size, len(out))
			}
		} else {
			size = length - CompressionBorder - chunkHeaderLen
			if chunkHeaderLen+size >= JumboBorder || len(out) != chunkHeaderLen+size {
				t.Fatalf("%d bytes: got an ordinary chunk of %d compressed bytes in %d, want a jumbo", n, size, len(out))
			}
		}
		// The zeros decompress to a packet of length 0, which is refused:
		// the error shows that the chunk's framing was accepted.
		var s Splitter
		if _, err := s.Write(out); err != nil {
			t.Fatal(err)
		}
		_, err = s.Next()
		var de *wire.DecodeError
		if !errors.As(err, &de) || de.Field != "chunk packet length" || !errors.Is(err, wire.ErrRange) {
			t.Fatalf("%d bytes: got %v, want the chunk accepted and its first packet refused", n, err)
		}
	}
}

func TestSplitterBounds(t *testing.T) {
	jumbo := func(total uint32) []byte {
		b := []byte{0xff, 0xff, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[2:], total)
		return b
	}
	u16 := func(v int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
	tests := []struct {
		name  string
		s     Splitter
		width int
		in    []byte
		want  error
		field string
	}{
		{"length 2 at width 1", Splitter{}, 1, u16(2), wire.ErrRange, "length"},
		{"length 3 at width 2", Splitter{}, 2, u16(3), wire.ErrRange, "length"},
		{"length above MaxLenPacket", Splitter{}, 1, u16(MaxLenPacket + 1), wire.ErrTooLong, "length"},
		{"length above MaxPacket", Splitter{MaxPacket: 100}, 2, u16(101), wire.ErrTooLong, "length"},
		{"length 16384 with MaxPacket clamped", Splitter{MaxPacket: 1 << 20}, 2, u16(CompressionBorder - 1), nil, ""},
		{"chunk of size 0", Splitter{}, 1, u16(CompressionBorder), wire.ErrRange, "chunk length"},
		{"chunk with no compressed byte", Splitter{}, 1, u16(CompressionBorder + 2), wire.ErrRange, "chunk length"},
		{"chunk above MaxChunk", Splitter{MaxChunk: 1000}, 1, u16(CompressionBorder + 1001), wire.ErrTooLong, "chunk length"},
		{"jumbo of size 6", Splitter{}, 2, jumbo(6), wire.ErrRange, "jumbo length"},
		{"jumbo above MaxChunk", Splitter{}, 2, jumbo(DefaultMaxChunk + 1), wire.ErrTooLong, "jumbo length"},
		{"jumbo of 4 GiB", Splitter{}, 2, jumbo(0xffffffff), wire.ErrTooLong, "jumbo length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.SetTypeWidth(tt.width)
			if _, err := s.Write(tt.in); err != nil {
				t.Fatal(err)
			}
			_, err := s.Next()
			if tt.want == nil {
				if !errors.Is(err, ErrNeedMore) {
					t.Fatalf("got %v, want %v", err, ErrNeedMore)
				}
				return
			}
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != 0 {
				t.Fatalf("got %v, want %v on field %q at offset 0", err, tt.want, tt.field)
			}
			// Sticky until Reset.
			if _, err2 := s.Next(); err2 != err {
				t.Fatalf("Next after the error: got %v, want %v", err2, err)
			}
			if _, err2 := s.Write([]byte{0}); err2 != err {
				t.Fatalf("Write after the error: got %v, want %v", err2, err)
			}
			s.Reset()
			if _, err := s.Write(packet(t, 1, 7, "hi")); err != nil {
				t.Fatal(err)
			}
			if f, err := s.Next(); err != nil || string(f.Body) != "hi" {
				t.Fatalf("after Reset: got %v (%v), want the packet", f, err)
			}
		})
	}
	t.Run("error offset counts the stream", func(t *testing.T) {
		var s Splitter
		in := append(packet(t, 1, 7, "hi"), 0, 1)
		s.Write(in)
		s.Next()
		_, err := s.Next()
		var de *wire.DecodeError
		if !errors.As(err, &de) || de.Offset != 5 {
			t.Fatalf("got %v, want an error at offset 5", err)
		}
	})
}

func TestSplitterBufferBound(t *testing.T) {
	s := Splitter{MaxChunk: 1000}
	if got, want := s.MaxBuffered(), MaxLenPacket; got != want {
		t.Fatalf("MaxBuffered: got %v, want %v", got, want)
	}
	// Ten full-size packets in one write: the splitter takes what fits,
	// and what fits always holds a whole packet.
	var stream []byte
	for i := range 10 {
		stream = append(stream, packet(t, 1, uint16(i), string(make([]byte, MaxLenPacket-3)))...)
	}
	n, err := s.Write(stream)
	if n != MaxLenPacket || !errors.Is(err, ErrBufferFull) {
		t.Fatalf("Write: got %d, %v, want %d, %v", n, err, MaxLenPacket, ErrBufferFull)
	}
	got, err := feed(&s, stream[n:], nil, false)
	if err != nil {
		t.Fatal(err)
	}
	first, err := feed(&Splitter{MaxChunk: 1000}, stream, nil, false)
	if err != nil || len(first) != 10 {
		t.Fatalf("got %d frames (%v), want 10", len(first), err)
	}
	if len(got) != 10 {
		t.Fatalf("got %d frames, want 10", len(got))
	}
	if cap(s.buf) > s.MaxBuffered() {
		t.Fatalf("buffer capacity: got %d, want at most %d", cap(s.buf), s.MaxBuffered())
	}
}

// zlibBytes compresses b with the standard library's zlib at level 9.
func zlibBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// frameChunk frames compressed bytes as an ordinary chunk, or a jumbo.
func frameChunk(compressed []byte, jumbo bool) []byte {
	if jumbo {
		b := []byte{0xff, 0xff, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[2:], uint32(jumboHeaderLen+len(compressed)))
		return append(b, compressed...)
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(CompressionBorder+chunkHeaderLen+len(compressed))), compressed...)
}

func TestSplitterChunkErrors(t *testing.T) {
	vs := testutil.Vectors(t)
	p1 := vs["packet-width1"].Bytes
	inner := vs["chunk-join"].Bytes
	good := zlibBytes(t, p1)
	badSum := bytes.Clone(good)
	badSum[len(badSum)-1] ^= 1
	var raw bytes.Buffer
	fw, _ := flate.NewWriter(&raw, flate.BestCompression)
	fw.Write(p1)
	fw.Close()
	tests := []struct {
		name  string
		in    []byte
		want  error
		field string
	}{
		{"nested chunk", frameChunk(zlibBytes(t, append(bytes.Clone(p1), inner...)), false), ErrNestedChunk, "chunk packet length"},
		{"nested jumbo", frameChunk(zlibBytes(t, append(bytes.Clone(p1), vs["jumbo-small"].Bytes...)), true), ErrNestedChunk, "chunk packet length"},
		{"packet cut by the chunk's end", frameChunk(zlibBytes(t, p1[:4]), false), wire.ErrTruncated, "chunk packet"},
		{"one byte after the last packet", frameChunk(zlibBytes(t, append(bytes.Clone(p1), 0)), false), wire.ErrTruncated, "chunk packet length"},
		{"packet below the header size", frameChunk(zlibBytes(t, []byte{0, 2, 0}), false), wire.ErrRange, "chunk packet length"},
		{"packet above MaxPacket", frameChunk(zlibBytes(t, append([]byte{0x10, 0x01}, make([]byte, MaxLenPacket)...)), false), wire.ErrTooLong, "chunk packet length"},
		{"byte after the zlib stream", frameChunk(append(bytes.Clone(good), 0), false), ErrCorruptChunk, "chunk"},
		{"bad checksum", frameChunk(badSum, false), ErrCorruptChunk, "chunk"},
		{"raw deflate", frameChunk(raw.Bytes(), false), ErrCorruptChunk, "chunk"},
		{"zlib stream cut short", frameChunk(good[:len(good)-2], true), ErrCorruptChunk, "chunk"},
		{"garbage", frameChunk([]byte("not zlib at all"), false), ErrCorruptChunk, "chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Splitter
			got, err := feed(&s, tt.in, nil, false)
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field {
				t.Fatalf("got %v after %v, want %v on field %q", err, got, tt.want, tt.field)
			}
		})
	}
	t.Run("empty chunk yields nothing", func(t *testing.T) {
		var s Splitter
		in := append(frameChunk(zlibBytes(t, nil), false), p1...)
		got, err := feed(&s, in, nil, false)
		if want := []frame{{1, 7, "hi", false}}; err != nil || !equalFrames(got, want) {
			t.Fatalf("got %v (%v), want %v", got, err, want)
		}
	})
}

// The decompressed-size limit holds to the byte, and a bomb is stopped
// after at most limit+1 bytes of output, whatever it would expand to.
func TestDecompressionLimit(t *testing.T) {
	const limit = 64 << 10
	p := packet(t, 1, 7, string(make([]byte, 97))) // 100 bytes
	exact := bytes.Repeat(p, limit/100)
	exact = append(exact, packet(t, 1, 7, string(make([]byte, limit%100-3)))...)
	over := bytes.Repeat(p, limit/100)
	over = append(over, packet(t, 1, 7, string(make([]byte, limit%100-2)))...)
	if len(exact) != limit || len(over) != limit+1 {
		t.Fatalf("test streams: got %d and %d bytes, want %d and %d", len(exact), len(over), limit, limit+1)
	}
	t.Run("exactly the limit", func(t *testing.T) {
		s := Splitter{MaxDecompressed: limit}
		got, err := feed(&s, frameChunk(zlibBytes(t, exact), false), nil, false)
		if err != nil || len(got) != limit/100+1 {
			t.Fatalf("got %d frames (%v), want %d", len(got), err, limit/100+1)
		}
	})
	t.Run("one byte over", func(t *testing.T) {
		s := Splitter{MaxDecompressed: limit}
		_, err := feed(&s, frameChunk(zlibBytes(t, over), false), nil, false)
		var de *wire.DecodeError
		if !errors.Is(err, ErrDecompressedTooLarge) || !errors.As(err, &de) || de.Field != "chunk" {
			t.Fatalf("got %v, want %v on field \"chunk\"", err, ErrDecompressedTooLarge)
		}
	})
	t.Run("Decompress", func(t *testing.T) {
		out, err := Decompress(nil, zlibBytes(t, exact), limit)
		if err != nil || !bytes.Equal(out, exact) {
			t.Fatalf("at the limit: got %d bytes (%v), want %d", len(out), err, len(exact))
		}
		if _, err := Decompress(nil, zlibBytes(t, over), limit); !errors.Is(err, ErrDecompressedTooLarge) {
			t.Fatalf("over the limit: got %v, want %v", err, ErrDecompressedTooLarge)
		}
	})

	// 10 MiB of well-formed packets of zeros compress about a thousandfold:
	// the splitter returns packets up to the limit and then fails, its
	// memory staying at one window whatever the limit.
	bombPacket := packet(t, 1, 0, string(make([]byte, MaxLenPacket-3)))
	bomb := zlibBytes(t, bytes.Repeat(bombPacket, 10<<20/MaxLenPacket))
	for _, tt := range []struct {
		name  string
		limit int
	}{{"bomb, default limit", 0}, {"bomb, 64 KiB limit", limit}} {
		t.Run(tt.name, func(t *testing.T) {
			in := frameChunk(bomb, false)
			s := Splitter{MaxDecompressed: tt.limit}
			if _, err := s.Write(in); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			packets, err := 0, error(nil)
			for err == nil {
				_, err = s.Next()
				packets++
			}
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("got %v, want %v", err, ErrDecompressedTooLarge)
			}
			if got, want := packets-1, s.maxDecompressed()/MaxLenPacket; got != want {
				t.Fatalf("packets before the error: got %v, want %v", got, want)
			}
			// One window plus the zlib state: a 32 KiB history and tables.
			allocated := after.TotalAlloc - before.TotalAlloc
			if bound := uint64(s.outWindow()) + 128<<10; allocated > bound {
				t.Fatalf("allocated %d bytes for a %d-byte bomb, want at most %d", allocated, len(bomb), bound)
			}
			t.Logf("%d compressed bytes: stopped after allocating %d bytes", len(bomb), allocated)
		})
	}
	t.Run("bomb, Decompress", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Decompress(nil, bomb, limit)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrDecompressedTooLarge) {
			t.Fatalf("got %v, want %v", err, ErrDecompressedTooLarge)
		}
		// The output grows by doubling up to limit+1 bytes, so the
		// buffers it drops add up to less than as much again.
		allocated := after.TotalAlloc - before.TotalAlloc
		if bound := uint64(2*(limit+1)) + 128<<10; allocated > bound {
			t.Fatalf("allocated %d bytes, want at most %d", allocated, bound)
		}
		t.Logf("Decompress stopped after allocating %d bytes", allocated)
	})
}

func TestDecompressVectors(t *testing.T) {
	vs := testutil.Vectors(t)
	tests := []struct {
		name string
		hdr  int
		want []byte
	}{
		{"chunk-join", chunkHeaderLen, bytes.Join([][]byte{
			{0, 3, 0}, vs["join-reply-accept"].Bytes, {0, 4, 0, 1}, {0, 9, 1, 0x23}, []byte("hello")}, nil)},
		{"jumbo-small", jumboHeaderLen, bytes.Join([][]byte{vs["packet-width2"].Bytes, {0, 4, 0xff, 0xff}}, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Decompress(nil, vs[tt.name].Bytes[tt.hdr:], 0)
			if err != nil || !bytes.Equal(out, tt.want) {
				t.Fatalf("got %x (%v), want %x", out, err, tt.want)
			}
		})
	}
}

// typicalStream is a stream of game packets in the 2-byte-type protocol, of
// the sizes a running game sends most: short unit and city updates.
func typicalStream(t testing.TB, n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	var stream []byte
	for range n {
		body := make([]byte, 8+rng.IntN(120))
		for j := range body {
			body[j] = byte(rng.IntN(16))
		}
		p, err := AppendPacket(stream, 2, uint16(rng.IntN(300)), body)
		if err != nil {
			t.Fatal(err)
		}
		stream = p
	}
	return stream
}

func TestSplitterZeroAllocs(t *testing.T) {
	stream := typicalStream(t, 500)
	var s Splitter
	s.SetTypeWidth(2)
	run := func() {
		for p := stream; len(p) > 0; {
			n := min(len(p), 1460) // one TCP segment's payload at a time
			if _, err := s.Write(p[:n]); err != nil {
				panic(err)
			}
			p = p[n:]
			drainAll(t, &s)
		}
	}
	run() // grow the buffer once
	if allocs := testing.AllocsPerRun(100, run); allocs != 0 {
		t.Fatalf("got %v allocations per %d-byte stream, want 0", allocs, len(stream))
	}
}

// A chunk costs the allocations of the standard library's zlib reader (one
// on reset, more per dynamic Huffman block), never one per packet.
func TestChunkAllocs(t *testing.T) {
	inner := typicalStream(t, 300)
	chunk, err := AppendCompressedChunk(nil, inner, zlib.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	var s Splitter
	s.SetTypeWidth(2)
	run := func() {
		if _, err := s.Write(chunk); err != nil {
			panic(err)
		}
		drainAll(t, &s)
	}
	run()
	allocs := testing.AllocsPerRun(100, run)
	if allocs >= 300/4 {
		t.Fatalf("got %v allocations per chunk of 300 packets, want far fewer than one per packet", allocs)
	}
	t.Logf("%v allocations per chunk of 300 packets (%d bytes)", allocs, len(inner))
}
