package freeciv

import (
	"bytes"
	"compress/zlib"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// fuzzLimit keeps the fuzzed splitter's decompression small and quick.
const fuzzLimit = 64 << 10

// splitRun is what a splitter made of a stream: its frames and its error.
type splitRun struct {
	frames []frame
	err    string
}

// runSplitter feeds stream cut at cuts and checks the splitter's invariants
// after every call. With switchAt > 0 it switches to the 2-byte type after
// that many frames, as a caller that decodes the JOIN_REPLY itself does.
func runSplitter(t *testing.T, s *Splitter, stream []byte, cuts []int, switchAt int) splitRun {
	var run splitRun
	check := func() {
		if s.Buffered() > s.MaxBuffered() || cap(s.buf) > s.MaxBuffered() {
			t.Fatalf("buffered %d, capacity %d: want at most %d", s.Buffered(), cap(s.buf), s.MaxBuffered())
		}
		if cap(s.out) > s.outWindow() {
			t.Fatalf("window capacity %d: want at most %d", cap(s.out), s.outWindow())
		}
	}
	prev := 0
	for _, c := range append(cuts, len(stream)) {
		for p := stream[prev:c]; len(p) > 0; {
			n, werr := s.Write(p)
			p = p[n:]
			check()
			for {
				w := s.TypeWidth()
				f, err := s.Next()
				check()
				if errors.Is(err, ErrNeedMore) {
					break
				}
				if err != nil {
					var de *wire.DecodeError
					if !errors.As(err, &de) {
						t.Fatalf("error %v is not a *wire.DecodeError", err)
					}
					if _, again := s.Next(); again != err {
						t.Fatalf("error not sticky: got %v, then %v", err, again)
					}
					run.err = err.Error()
					return run
				}
				length := int(f.Packet[0])<<8 | int(f.Packet[1])
				if length != len(f.Packet) || length < HeaderLen(w) || length > s.maxPacket() ||
					len(f.Body) != length-HeaderLen(w) {
					t.Fatalf("frame %x at width %d: inconsistent lengths", f.Packet, w)
				}
				run.frames = append(run.frames, frame{w, f.Type, string(f.Body), f.FromChunk})
				if len(run.frames) == switchAt {
					s.SetTypeWidth(2)
				}
			}
			if werr != nil && !errors.Is(werr, ErrBufferFull) {
				t.Fatalf("Write: %v", werr)
			}
		}
		prev = c
	}
	return run
}

// The frames and the error a stream yields do not depend on how it is cut.
func FuzzSplitter(f *testing.F) {
	vs := testutil.Vectors(f)
	stream, _ := joinStream(f)
	f.Add(stream, uint64(1), uint8(0), true)
	for _, v := range vs {
		f.Add(v.Bytes, uint64(2), uint8(0), false)
	}
	f.Add(append(bytes.Clone(vs["join-reply-accept"].Bytes), vs["packet-width2"].Bytes...), uint64(3), uint8(1), false)
	f.Add(append(bytes.Clone(vs["jumbo-small"].Bytes), vs["chunk-join"].Bytes...), uint64(4), uint8(0), false)
	f.Fuzz(func(t *testing.T, stream []byte, seed uint64, switchAt uint8, auto bool) {
		newSplitter := func() *Splitter {
			s := &Splitter{MaxDecompressed: fuzzLimit, MaxChunk: 64 << 10, SwitchOnJoin: auto}
			if switchAt == 255 {
				s.SetTypeWidth(2)
			}
			return s
		}
		whole := runSplitter(t, newSplitter(), stream, nil, int(switchAt))
		rng := rand.New(rand.NewPCG(seed, seed>>32))
		cuts := randomCuts(rng, len(stream), int(seed%16))
		split := runSplitter(t, newSplitter(), stream, cuts, int(switchAt))
		if whole.err != split.err || !equalFrames(whole.frames, split.frames) {
			t.Fatalf("cuts %v changed the result: got %v (%s), want %v (%s)",
				cuts, split.frames, split.err, whole.frames, whole.err)
		}
	})
}

// Decompress and the splitter agree on every chunk, and whatever
// decompresses re-compresses to the same packets.
func FuzzDecompress(f *testing.F) {
	vs := testutil.Vectors(f)
	f.Add(vs["chunk-join"].Bytes[chunkHeaderLen:])
	f.Add(vs["jumbo-small"].Bytes[jumboHeaderLen:])
	f.Add(zlibBytes(f, nil))
	f.Add(zlibBytes(f, bytes.Repeat(vs["packet-width2"].Bytes, 10000)))
	f.Add(zlibBytes(f, append(bytes.Clone(vs["packet-width2"].Bytes), vs["chunk-join"].Bytes...)))
	f.Add([]byte{0x78, 0x9c})
	f.Fuzz(func(t *testing.T, compressed []byte) {
		out, derr := Decompress(nil, compressed, fuzzLimit)
		if derr == nil && len(out) > fuzzLimit {
			t.Fatalf("Decompress: %d bytes, want at most %d", len(out), fuzzLimit)
		}

		s := Splitter{MaxDecompressed: fuzzLimit}
		s.SetTypeWidth(2)
		if _, err := s.Write(frameChunk(compressed, len(compressed) > 40000)); err != nil {
			return // too big a chunk for the splitter's bound
		}
		var got []byte
		var serr error
		for {
			fr, err := s.Next()
			if err != nil {
				if !errors.Is(err, ErrNeedMore) {
					serr = err
				}
				break
			}
			got = append(got, fr.Packet...)
		}
		switch {
		case derr != nil && serr == nil:
			t.Fatalf("Decompress failed (%v) but the splitter did not", derr)
		case derr == nil && !bytes.HasPrefix(out, got):
			t.Fatalf("splitter packets %x are not a prefix of the decompressed %x", got, out)
		case derr == nil && serr == nil && !bytes.Equal(got, out):
			t.Fatalf("splitter packets %x, want %x", got, out)
		case errors.Is(derr, ErrDecompressedTooLarge) && !errors.Is(serr, ErrDecompressedTooLarge):
			// The splitter may stop earlier at a malformed packet.
			var de *wire.DecodeError
			if !errors.As(serr, &de) || de.Field == "chunk" {
				t.Fatalf("Decompress: %v; splitter: %v", derr, serr)
			}
		}
		if derr != nil {
			return
		}
		again, err := AppendCompressedChunk(nil, out, zlib.BestSpeed)
		if err != nil {
			t.Fatal(err)
		}
		hdr := chunkHeaderLen
		if again[0] == 0xff && again[1] == 0xff {
			hdr = jumboHeaderLen
		}
		back, err := Decompress(nil, again[hdr:], fuzzLimit)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("re-compressed: got %x (%v), want %x", back, err, out)
		}
	})
}

// fuzzSpec mixes every kind in a packet small enough for the fuzzer to
// reach all of its fields.
var fuzzSpec = PacketSpec{Type: 0x77, Fields: []FieldSpec{
	{Name: "key", Kind: KindSint16, Key: true},
	{Name: "flag", Kind: KindBool, Key: true},
	{Name: "a", Kind: KindUint8},
	{Name: "b", Kind: KindBool},
	{Name: "c", Kind: KindString, Size: 8},
	{Name: "d", Kind: KindArray, Elem: KindString, Size: 4, Len: 3, Diff: true},
	{Name: "e", Kind: KindArray, Elem: KindBool, Len: 2},
	{Name: "f", Kind: KindUint32},
	{Name: "g", Kind: KindBool},
	{Name: "h", Kind: KindArray, Elem: KindSint8, Len: 4, Diff: true},
	{Name: "i", Kind: KindUint16},
}}

// Decoding is stable: decode → encode → decode gives the same packet, the
// encoding is canonical (re-encoding gives the same bytes) and never longer
// than the input, which may mark unchanged fields as changed.
func FuzzDelta(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 8 {
		prev := randomValues(rng, &fuzzSpec)
		cur := mutate(rng, &fuzzSpec, prev)
		a, _ := fuzzSpec.Encode(nil, nil, prev)
		b, _ := fuzzSpec.Encode(nil, prev, cur)
		f.Add(a, b)
	}
	f.Add([]byte{}, []byte{0xff, 0xff, 0, 0, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		prev, err := fuzzSpec.Decode(nil, nil, a)
		if err != nil {
			prev = nil
		}
		cur, err := fuzzSpec.Decode(nil, prev, b)
		if err != nil {
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *wire.DecodeError", err)
			}
			return
		}
		body, err := fuzzSpec.Encode(nil, prev, cur)
		if err != nil {
			t.Fatalf("re-encoding a decoded packet: %v", err)
		}
		if len(body) > len(b) {
			t.Fatalf("canonical encoding of %d bytes, longer than the input's %d", len(body), len(b))
		}
		again, err := fuzzSpec.Decode(nil, prev, body)
		if err != nil || !fuzzSpec.Equal(again, cur) {
			t.Fatalf("decode → encode → decode: got %v (%v), want %v", again, err, cur)
		}
		body2, err := fuzzSpec.Encode(nil, prev, again)
		if err != nil || !bytes.Equal(body2, body) {
			t.Fatalf("encoding not stable: got %x (%v), want %x", body2, err, body)
		}
	})
}

// The join packets have fixed layouts and strict lengths, so whatever
// decodes re-encodes to the same bytes.
func FuzzJoinReq(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		ok, more := PlausibleJoinReq(in)
		if ok {
			// The first packet of the stream must decode.
			var first JoinReq
			if err := first.Decode(in[:int(in[0])<<8|int(in[1])]); err != nil {
				t.Fatalf("PlausibleJoinReq accepts a packet Decode refuses: %v", err)
			}
		}
		var m JoinReq
		if !testutil.Decodes(t, in, m.Decode) {
			return
		}
		if !ok || more {
			t.Fatalf("PlausibleJoinReq of a valid JOIN_REQ: got %v, %v, want true, false", ok, more)
		}
		testutil.Reencodes(t, in, m.AppendTo)
		for n := range len(in) {
			if ok, more := PlausibleJoinReq(in[:n]); ok || !more {
				t.Fatalf("prefix of %d bytes: got %v, %v, want false, true", n, ok, more)
			}
		}
	})
}

func FuzzJoinReply(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		var m JoinReply
		if !testutil.Decodes(t, in, m.Decode) {
			return
		}
		testutil.Reencodes(t, in, m.AppendTo)
	})
}

func FuzzLANAnnouncement(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if err := DecodeLANRequest(in); err == nil && !bytes.Equal(in, []byte{LANVersion}) {
			t.Fatalf("DecodeLANRequest accepted %x", in)
		}
		var a LANAnnouncement
		if !testutil.Decodes(t, in, a.Decode) {
			return
		}
		testutil.Reencodes(t, in, a.AppendTo)
	})
}
