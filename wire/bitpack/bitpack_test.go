package bitpack_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gamegate/gamegate/wire"
	"github.com/gamegate/gamegate/wire/bitpack"
)

// golden is 3 bits, then 10, then 24: 37 bits that straddle the first word.
//
//	x = 0b101                      (3 bits)
//	y = 0x2AB = 10_1010_1011       (10 bits)
//	z = 0xC0FFEE = 11000_0001_1111_1111_1110_1110 (24 bits)
//
// The first value takes the lowest bits, so the 37 bits, most significant
// first, are z y x:
//
//	bit 36    32 31                   13 12        3 2 0
//	    11000   | 000 1111 1111 1110 1110 | 1010101011 | 101
//	    z[23:19]| z[18:0]                 | y          | x
//
// The low 32 bits regroup as 0001 1111 1111 1101 1101 0101 0101 1101
// = 0x1FFDD55D (check: 0xC0FFEE<<13 | 0x2AB<<3 | 5 = 0x18_1FFD_D55D), which
// goes out as one little-endian word: 5D D5 FD 1F. The 5 bits left over,
// 11000 = 0x18, go out as a single byte, not a zero-padded word: 37 bits make
// 5 bytes.
var golden = []byte{0x5D, 0xD5, 0xFD, 0x1F, 0x18}

const (
	goldenX = 0b101
	goldenY = 0x2AB
	goldenZ = 0xC0FFEE
)

func TestGolden(t *testing.T) {
	var w bitpack.Writer
	w.WriteBits(goldenX, 3)
	w.WriteBits(goldenY, 10)
	w.WriteBits(goldenZ, 24)
	if got, want := w.BitsWritten(), 37; got != want {
		t.Fatalf("BitsWritten: got %v, want %v", got, want)
	}
	out, err := w.Flush()
	if err != nil {
		t.Fatalf("Flush: got %v, want nil", err)
	}
	if !bytes.Equal(out, golden) {
		t.Fatalf("bytes: got % X, want % X", out, golden)
	}

	r := bitpack.NewReader(golden)
	for _, f := range []struct {
		name string
		n    int
		want uint32
	}{{"x", 3, goldenX}, {"y", 10, goldenY}, {"z", 24, goldenZ}} {
		got, err := r.ReadBits(f.n)
		if err != nil || got != f.want {
			t.Fatalf("%s: got %#x, %v, want %#x, nil", f.name, got, err, f.want)
		}
	}
	if got, want := r.BitsRemaining(), 3; got != want {
		t.Fatalf("BitsRemaining: got %v, want %v", got, want)
	}
}

// TestShortFinalWord checks inputs whose length is not a multiple of 4: the
// last word is loaded from only the bytes that exist, whatever lies beyond
// the slice in its backing array.
func TestShortFinalWord(t *testing.T) {
	backing := []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	for n := 1; n <= 7; n++ {
		t.Run(fmt.Sprintf("len%d", n), func(t *testing.T) {
			in := backing[:n]
			r := bitpack.NewReader(in)
			for i := range n {
				got, err := r.ReadBits(8)
				if err != nil || got != uint32(in[i]) {
					t.Fatalf("byte %d: got %#x, %v, want %#x, nil", i, got, err, in[i])
				}
			}
			if _, err := r.ReadBits(1); !errors.Is(err, wire.ErrTruncated) {
				t.Fatalf("past end: got %v, want %v", err, wire.ErrTruncated)
			}
		})
	}
}

type field struct {
	v uint32
	n int
}

func writeFields(t *testing.T, fields []field) []byte {
	t.Helper()
	var w bitpack.Writer
	w.Reset(make([]byte, 0, 8))
	total := 0
	for _, f := range fields {
		w.WriteBits(f.v, f.n)
		total += f.n
	}
	if got := w.BitsWritten(); got != total {
		t.Fatalf("BitsWritten: got %v, want %v", got, total)
	}
	out, err := w.Flush()
	if err != nil {
		t.Fatalf("Flush: got %v, want nil", err)
	}
	if got, want := len(out), (total+7)/8; got != want {
		t.Fatalf("len: got %v, want %v", got, want)
	}
	return out
}

func checkFields(t *testing.T, in []byte, fields []field) {
	t.Helper()
	r := bitpack.NewReader(in)
	for i, f := range fields {
		want := uint32(uint64(f.v) & (1<<f.n - 1))
		got, err := r.ReadBits(f.n)
		if err != nil || got != want {
			t.Fatalf("field %d (%d bits at bit %d): got %#x, %v, want %#x, nil",
				i, f.n, r.BitsRead(), got, err, want)
		}
	}
	if got := r.BitsRemaining(); got < 0 || got > 7 {
		t.Fatalf("BitsRemaining: got %v, want 0..7", got)
	}
	pad, err := r.ReadBits(r.BitsRemaining())
	if err != nil || pad != 0 {
		t.Fatalf("padding: got %#x, %v, want 0, nil", pad, err)
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		fields []field
	}{
		{"empty", nil},
		{"zero widths", []field{{0xFFFF, 0}, {1, 1}, {0xFFFFFFFF, 0}}},
		{"33 single bits", func() []field {
			f := make([]field, 33)
			for i := range f {
				f[i] = field{uint32(i % 3 & 1), 1}
			}
			return f
		}()},
		{"31 then 1 fills a word", []field{{0x7FFFFFFF, 31}, {1, 1}, {0, 1}}},
		{"31 then 32 straddles", []field{{0x12345678, 31}, {0xDEADBEEF, 32}, {1, 1}}},
		{"three full words", []field{{0xFFFFFFFF, 32}, {0, 32}, {0x80000001, 32}}},
		{"30 then 10 straddles", []field{{0x3FFFFFFF, 30}, {0x3FF, 10}}},
		{"high bits masked", []field{{0xFFFFFFFF, 5}, {0xFFFFFFF0, 4}, {0xFFFFFFFF, 31}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkFields(t, writeFields(t, tt.fields), tt.fields)
		})
	}

	rng := rand.New(rand.NewPCG(0x6761, 0x6d65))
	special := []int{0, 1, 31, 32}
	for i := range 500 {
		fields := make([]field, rng.IntN(120))
		for j := range fields {
			n := rng.IntN(33)
			if rng.IntN(3) == 0 {
				n = special[rng.IntN(len(special))]
			}
			fields[j] = field{rng.Uint32(), n}
		}
		t.Run(fmt.Sprintf("random/%d", i), func(t *testing.T) {
			checkFields(t, writeFields(t, fields), fields)
		})
	}
}

func TestWriterMasksHighBits(t *testing.T) {
	for n := 0; n <= 32; n++ {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			var w bitpack.Writer
			w.WriteBits(0xFFFFFFFF, n)
			w.WriteBits(0, 8)
			out, err := w.Flush()
			if err != nil {
				t.Fatalf("Flush: got %v, want nil", err)
			}
			r := bitpack.NewReader(out)
			got, _ := r.ReadBits(n)
			if want := uint32(1<<n - 1); got != want {
				t.Fatalf("value: got %#x, want %#x", got, want)
			}
			if got, err := r.ReadBits(8); got != 0 || err != nil {
				t.Fatalf("next field: got %#x, %v, want 0, nil", got, err)
			}
		})
	}
}

func TestWriterRejects(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *bitpack.Writer) error
		want  error
	}{
		{"int above max", func(w *bitpack.Writer) error { return w.WriteInt(33, 0, 32) }, wire.ErrRange},
		{"int below min", func(w *bitpack.Writer) error { return w.WriteInt(-1, 0, 32) }, wire.ErrRange},
		{"int below negative min", func(w *bitpack.Writer) error { return w.WriteInt(-6, -5, 5) }, wire.ErrRange},
		{"int empty range", func(w *bitpack.Writer) error { return w.WriteInt(0, 1, 0) }, wire.ErrRange},
		{"int min of int32", func(w *bitpack.Writer) error {
			return w.WriteInt(math.MinInt32, math.MinInt32+1, math.MaxInt32)
		}, wire.ErrRange},
		{"bits width 33", func(w *bitpack.Writer) error { w.WriteBits(1, 33); return w.Err() }, bitpack.ErrWidth},
		{"bits width -1", func(w *bitpack.Writer) error { w.WriteBits(1, -1); return w.Err() }, bitpack.ErrWidth},
		{"bits width 64", func(w *bitpack.Writer) error { w.WriteBits(1, 64); return w.Err() }, bitpack.ErrWidth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{0xAA}
			var w bitpack.Writer
			w.Reset(dst)
			w.WriteBits(0x1FF, 9)
			before := w.BitsWritten()
			if err := tt.write(&w); !errors.Is(err, tt.want) {
				t.Fatalf("write: got %v, want %v", err, tt.want)
			}
			if got := w.BitsWritten(); got != before {
				t.Fatalf("BitsWritten: got %v, want %v", got, before)
			}
			// Sticky: later writes do nothing and report the first failure.
			w.WriteBits(1, 1)
			if err := w.WriteInt(1, 0, 1); !errors.Is(err, tt.want) {
				t.Fatalf("later WriteInt: got %v, want %v", err, tt.want)
			}
			if got := w.BitsWritten(); got != before {
				t.Fatalf("BitsWritten after failure: got %v, want %v", got, before)
			}
			out, err := w.Flush()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Flush: got %v, want %v", err, tt.want)
			}
			if !bytes.Equal(out, dst) {
				t.Fatalf("Flush output: got % X, want % X (dst unchanged)", out, dst)
			}
		})
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		name     string
		min, max int32
		values   []int32
		bits     int
	}{
		{"single value costs nothing", 7, 7, []int32{7, 7}, 0},
		{"bool-like", 0, 1, []int32{0, 1, 1}, 1},
		{"0..32", 0, 32, []int32{0, 1, 31, 32}, 6},
		{"negative", -1000, -1, []int32{-1000, -500, -1}, 10},
		{"around zero", -1, 1, []int32{-1, 0, 1}, 2},
		{"all int32", math.MinInt32, math.MaxInt32, []int32{math.MinInt32, -1, 0, math.MaxInt32}, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w bitpack.Writer
			for _, v := range tt.values {
				if err := w.WriteInt(v, tt.min, tt.max); err != nil {
					t.Fatalf("WriteInt(%d): got %v, want nil", v, err)
				}
			}
			if got, want := w.BitsWritten(), tt.bits*len(tt.values); got != want {
				t.Fatalf("BitsWritten: got %v, want %v", got, want)
			}
			out, _ := w.Flush()
			r := bitpack.NewReader(out)
			for _, want := range tt.values {
				got, err := r.ReadInt(tt.min, tt.max)
				if err != nil || got != want {
					t.Fatalf("ReadInt: got %v, %v, want %v, nil", got, err, want)
				}
			}
		})
	}
}

// TestReadIntRange checks that the values a 6-bit field can hold beyond
// [0,32] are refused, with the field and bit offset of the bad read.
func TestReadIntRange(t *testing.T) {
	for v := uint32(0); v < 64; v++ {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			var w bitpack.Writer
			w.WriteBits(0b10110, 5)
			w.WriteBits(v, 6)
			w.WriteBits(0xFF, 8)
			out, _ := w.Flush()

			r := bitpack.NewReader(out)
			if _, err := r.ReadBits(5); err != nil {
				t.Fatalf("prefix: got %v, want nil", err)
			}
			got, err := r.ReadInt(0, 32)
			if v <= 32 {
				if err != nil || got != int32(v) {
					t.Fatalf("ReadInt: got %v, %v, want %v, nil", got, err, v)
				}
				return
			}
			if !errors.Is(err, wire.ErrRange) || got != 0 {
				t.Fatalf("ReadInt: got %v, %v, want 0, %v", got, err, wire.ErrRange)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("errors.As: got %T, want *wire.DecodeError", err)
			}
			if de.Field != bitpack.FieldInt || de.Offset != 5 {
				t.Fatalf("DecodeError: got %q at %v, want %q at %v", de.Field, de.Offset, bitpack.FieldInt, 5)
			}
			// Sticky: the rest of the stream is not read.
			if got, err2 := r.ReadBits(8); got != 0 || err2 != err {
				t.Fatalf("later read: got %v, %v, want 0, %v", got, err2, err)
			}
			if got, err2 := r.ReadBool(); got || err2 != err {
				t.Fatalf("later ReadBool: got %v, %v, want false, %v", got, err2, err)
			}
			if got, want := r.BitsRead(), 5; got != want {
				t.Fatalf("BitsRead: got %v, want %v", got, want)
			}
			if got, want := r.BitsRemaining(), 0; got != want {
				t.Fatalf("BitsRemaining: got %v, want %v", got, want)
			}
			if r.Err() != err {
				t.Fatalf("Err: got %v, want %v", r.Err(), err)
			}
		})
	}
}

func TestReadIntEmptyRange(t *testing.T) {
	r := bitpack.NewReader([]byte{0})
	if _, err := r.ReadInt(1, 0); !errors.Is(err, wire.ErrRange) {
		t.Fatalf("got %v, want %v", err, wire.ErrRange)
	}
}

func TestReadBitsWidth(t *testing.T) {
	for _, n := range []int{-1, 33, 64, math.MinInt} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := bitpack.NewReader(make([]byte, 16))
			_, err := r.ReadBits(n)
			var de *wire.DecodeError
			if !errors.Is(err, bitpack.ErrWidth) || !errors.As(err, &de) || de.Field != bitpack.FieldBits {
				t.Fatalf("got %v, want a %q *wire.DecodeError wrapping %v", err, bitpack.FieldBits, bitpack.ErrWidth)
			}
		})
	}
	r := bitpack.NewReader(nil)
	if got, err := r.ReadBits(0); got != 0 || err != nil {
		t.Fatalf("0 bits of nothing: got %v, %v, want 0, nil", got, err)
	}
}

// op is one step of a message script, shared by the truncation test, the
// fuzz test and the benchmarks.
type op struct {
	kind     byte // opBits, opBool, opInt, opAlign
	n        int
	min, max int32
	v        int64 // the value written or read
}

const (
	opBits = iota
	opBool
	opInt
	opAlign
)

func encode(w *bitpack.Writer, ops []op) error {
	for _, o := range ops {
		switch o.kind {
		case opBits:
			w.WriteBits(uint32(o.v), o.n)
		case opBool:
			w.WriteBool(o.v == 1)
		case opInt:
			w.WriteInt(int32(o.v), o.min, o.max)
		case opAlign:
			w.AlignToByte()
		}
	}
	return w.Err()
}

// decode reads ops from r, storing what it read in got (same length as ops),
// and returns how many ops succeeded and the first error.
func decode(r *bitpack.Reader, ops, got []op) (int, error) {
	for i, o := range ops {
		got[i] = o
		var err error
		switch o.kind {
		case opBits:
			var v uint32
			v, err = r.ReadBits(o.n)
			got[i].v = int64(v)
		case opBool:
			var v bool
			v, err = r.ReadBool()
			got[i].v = 0
			if v {
				got[i].v = 1
			}
		case opInt:
			var v int32
			v, err = r.ReadInt(o.min, o.max)
			got[i].v = int64(v)
		case opAlign:
			err = r.AlignToByte()
		}
		if err != nil {
			return i, err
		}
	}
	return len(ops), nil
}

var message = []op{
	{kind: opBits, n: 3, v: goldenX},
	{kind: opBool, v: 1},
	{kind: opInt, min: 0, max: 32, v: 32},
	{kind: opBits, n: 32, v: 0xDEADBEEF},
	{kind: opInt, min: -1000, max: 1000, v: -999},
	{kind: opBool, v: 0},
	{kind: opAlign},
	{kind: opBits, n: 8, v: 0x5A},
	{kind: opBits, n: 0},
	{kind: opInt, min: math.MinInt32, max: math.MaxInt32, v: math.MinInt32},
	{kind: opBits, n: 5, v: 0x11},
}

func TestTruncation(t *testing.T) {
	var w bitpack.Writer
	if err := encode(&w, message); err != nil {
		t.Fatalf("encode: got %v, want nil", err)
	}
	full, _ := w.Flush()
	got := make([]op, len(message))
	r := bitpack.NewReader(full)
	if n, err := decode(&r, message, got); n != len(message) || err != nil {
		t.Fatalf("full message: got %d ops, %v, want %d, nil", n, err, len(message))
	}
	for i := range got {
		if got[i] != message[i] {
			t.Fatalf("op %d: got %+v, want %+v", i, got[i], message[i])
		}
	}
	for l := range len(full) {
		t.Run(fmt.Sprintf("prefix%d", l), func(t *testing.T) {
			r := bitpack.NewReader(full[:l])
			_, err := decode(&r, message, got)
			if !errors.Is(err, wire.ErrTruncated) {
				t.Fatalf("got %v, want %v", err, wire.ErrTruncated)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) || de.Offset > l*8 || de.Offset != r.BitsRead() {
				t.Fatalf("got %#v, want a *wire.DecodeError at bit %v <= %v", err, r.BitsRead(), l*8)
			}
		})
	}
}

func TestBitsRequired(t *testing.T) {
	tests := []struct {
		min, max int64
		want     int
	}{
		{0, 0, 0},
		{0, 1, 1},
		{0, 2, 2},
		{0, 31, 5},
		{0, 32, 6},
		{0, 63, 6},
		{0, 64, 7},
		{0, 1000, 10},
		{-1, 1, 2},
		{-5, -5, 0},
		{0, 1<<32 - 1, 32},
		{0, 1 << 32, 33},
		{math.MinInt32, math.MaxInt32, 32},
		{math.MinInt64, math.MaxInt64, 64},
		{math.MaxInt64 - 1, math.MaxInt64, 1},
		{1, 0, 0},  // empty range
		{5, -5, 0}, // empty range
		{math.MaxInt64, math.MinInt64, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d..%d", tt.min, tt.max), func(t *testing.T) {
			if got := bitpack.BitsRequired(tt.min, tt.max); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAlignToByte(t *testing.T) {
	t.Run("zero padding then bytes", func(t *testing.T) {
		var w bitpack.Writer
		w.Reset([]byte{0xEE}) // a byte the caller wrote first
		w.WriteBool(true)
		w.WriteBool(false)
		w.WriteBool(true)
		w.AlignToByte()
		if got, want := w.BitsWritten(), 8; got != want {
			t.Fatalf("BitsWritten: got %v, want %v", got, want)
		}
		out, err := w.Flush()
		if err != nil {
			t.Fatalf("Flush: got %v, want nil", err)
		}
		out = append(out, 0xAB, 0xCD) // byte-oriented fields follow
		if want := []byte{0xEE, 0b101, 0xAB, 0xCD}; !bytes.Equal(out, want) {
			t.Fatalf("bytes: got % X, want % X", out, want)
		}

		in := out[1:]
		r := bitpack.NewReader(in)
		for i, want := range []bool{true, false, true} {
			if got, err := r.ReadBool(); got != want || err != nil {
				t.Fatalf("bool %d: got %v, %v, want %v, nil", i, got, err, want)
			}
		}
		if err := r.AlignToByte(); err != nil {
			t.Fatalf("AlignToByte: got %v, want nil", err)
		}
		if got, want := r.BytePos(), 1; got != want {
			t.Fatalf("BytePos: got %v, want %v", got, want)
		}
		if got, want := in[r.BytePos():], []byte{0xAB, 0xCD}; !bytes.Equal(got, want) {
			t.Fatalf("rest: got % X, want % X", got, want)
		}
		// Already aligned: nothing to skip.
		if err := r.AlignToByte(); err != nil || r.BitsRead() != 8 {
			t.Fatalf("second AlignToByte: got %v at bit %v, want nil at bit 8", err, r.BitsRead())
		}
	})

	t.Run("bits continue after mid-stream flush", func(t *testing.T) {
		var w bitpack.Writer
		w.WriteBits(0x5, 3)
		if _, err := w.Flush(); err != nil {
			t.Fatalf("Flush: got %v, want nil", err)
		}
		w.WriteBits(0xABCDEF12, 32)
		out, _ := w.Flush()
		r := bitpack.NewReader(out)
		if got, _ := r.ReadBits(3); got != 0x5 {
			t.Fatalf("first: got %#x, want %#x", got, 0x5)
		}
		if err := r.AlignToByte(); err != nil {
			t.Fatalf("AlignToByte: got %v, want nil", err)
		}
		if got, err := r.ReadBits(32); got != 0xABCDEF12 || err != nil {
			t.Fatalf("second: got %#x, %v, want %#x, nil", got, err, 0xABCDEF12)
		}
	})

	tests := []struct {
		name string
		in   []byte
		skip int // bits read before aligning
	}{
		{"top padding bit set", []byte{0b1000_0101}, 3},
		{"lowest padding bit set", []byte{0x00, 0b0000_0010}, 9},
		{"in second word", []byte{0, 0, 0, 0, 0b0100_0000}, 33},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bitpack.NewReader(tt.in)
			for range tt.skip {
				if _, err := r.ReadBool(); err != nil {
					t.Fatalf("ReadBool: got %v, want nil", err)
				}
			}
			err := r.AlignToByte()
			var de *wire.DecodeError
			if !errors.Is(err, wire.ErrRange) || !errors.As(err, &de) {
				t.Fatalf("got %v, want a *wire.DecodeError wrapping %v", err, wire.ErrRange)
			}
			if de.Field != bitpack.FieldPadding || de.Offset != tt.skip {
				t.Fatalf("DecodeError: got %q at %v, want %q at %v", de.Field, de.Offset, bitpack.FieldPadding, tt.skip)
			}
		})
	}
}

func TestNoAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	got := make([]op, len(message))
	var w bitpack.Writer
	var r bitpack.Reader
	allocs := testing.AllocsPerRun(100, func() {
		w.Reset(buf)
		for i := range 40 {
			w.WriteBits(uint32(i)*0x9E3779B9, i%33)
			_ = w.WriteInt(int32(i), -1, 40)
		}
		_ = encode(&w, message)
		out, err := w.Flush()
		if err != nil {
			t.Fatal(err)
		}
		r.Reset(out)
		for i := range 40 {
			_, _ = r.ReadBits(i % 33)
			_, _ = r.ReadInt(-1, 40)
		}
		if _, err := decode(&r, message, got); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("allocs per run: got %v, want 0", allocs)
	}
}

// fuzzRanges are the ReadInt ranges a fuzz script can ask for.
var fuzzRanges = [...][2]int32{
	{0, 32}, {0, 0}, {-1, 1}, {0, 1000}, {-1000, 1000}, {7, 7},
	{math.MinInt32, math.MaxInt32}, {0, math.MaxInt32}, {1, 0}, {-5, 250},
}

// script turns data into read ops and the input to read them from: data[0]
// is the script length, the next bytes are one op each (top 2 bits the kind,
// low 6 bits its argument), the rest is the input. Width 33 is kept as a
// possible ReadBits argument to exercise ErrWidth.
func script(data []byte) ([]op, []byte) {
	if len(data) == 0 {
		return nil, nil
	}
	k := min(int(data[0]), len(data)-1)
	ops := make([]op, k)
	for i, s := range data[1 : 1+k] {
		kind, arg := s>>6, int(s&63)
		ops[i] = op{kind: kind}
		switch kind {
		case opBits:
			ops[i].n = arg % 34
		case opInt:
			rg := fuzzRanges[arg%len(fuzzRanges)]
			ops[i].min, ops[i].max = rg[0], rg[1]
		}
	}
	return ops, data[1+k:]
}

// scriptBytes is the inverse of script, for seeding the corpus.
func scriptBytes(ops []byte, in []byte) []byte {
	return append(append([]byte{byte(len(ops))}, ops...), in...)
}

func FuzzReader(f *testing.F) {
	// The golden stream read as 3, 10 and 24 bits, then once more past the end.
	f.Add(scriptBytes([]byte{3, 10, 24}, golden))
	f.Add(scriptBytes([]byte{3, 10, 24, 3, 1}, golden))
	// 0..32 in 6 bits carrying 33.
	f.Add(scriptBytes([]byte{opInt << 6, opInt << 6}, []byte{33, 0}))
	// Bools, then padding that is not zero.
	f.Add(scriptBytes([]byte{opBool << 6, opBool << 6, opAlign << 6, 8}, []byte{0xFF, 0x12}))
	// Every width once, over a short final word.
	all := make([]byte, 0, 40)
	for n := range 34 {
		all = append(all, byte(n))
	}
	f.Add(scriptBytes(all, bytes.Repeat([]byte{0xA5}, 67)))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		ops, in := script(data)
		got := make([]op, len(ops))
		r := bitpack.NewReader(in)
		n, err := decode(&r, ops, got)
		if err != nil {
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error: got %#v, want a *wire.DecodeError", err)
			}
			if de.Offset != r.BitsRead() || de.Offset < 0 || de.Offset > len(in)*8 {
				t.Fatalf("offset: got %v, want BitsRead %v within %v bits", de.Offset, r.BitsRead(), len(in)*8)
			}
			if v, err2 := r.ReadBits(1); v != 0 || err2 != err {
				t.Fatalf("after failure: got %v, %v, want 0, %v", v, err2, err)
			}
		} else if r.BitsRead()+r.BitsRemaining() != len(in)*8 {
			t.Fatalf("accounting: got %v read + %v remaining, want %v",
				r.BitsRead(), r.BitsRemaining(), len(in)*8)
		}
		done := got[:n]
		read := r.BitsRead()

		// Re-encoding what was read reproduces the input's bits, with the
		// unread tail of the last byte zeroed.
		var w bitpack.Writer
		if err := encode(&w, done); err != nil {
			t.Fatalf("encode: got %v, want nil", err)
		}
		if got, want := w.BitsWritten(), read; got != want {
			t.Fatalf("BitsWritten: got %v, want %v", got, want)
		}
		enc, _ := w.Flush()
		want := bytes.Clone(in[:(read+7)/8])
		if read%8 != 0 {
			want[read/8] &= 1<<(read%8) - 1
		}
		if !bytes.Equal(enc, want) {
			t.Fatalf("re-encoded: got % X, want % X", enc, want)
		}

		// Decode → encode → decode is stable.
		again := make([]op, len(done))
		r2 := bitpack.NewReader(enc)
		if n2, err := decode(&r2, done, again); n2 != len(done) || err != nil {
			t.Fatalf("decode of re-encoded: got %d ops, %v, want %d, nil", n2, err, len(done))
		}
		for i := range done {
			if again[i] != done[i] {
				t.Fatalf("op %d: got %+v, want %+v", i, again[i], done[i])
			}
		}
		var w2 bitpack.Writer
		_ = encode(&w2, again)
		if enc2, _ := w2.Flush(); !bytes.Equal(enc2, enc) {
			t.Fatalf("second encode: got % X, want % X", enc2, enc)
		}
	})
}

// benchOps is a realistic mix: 100 values of widths 1..32.
func benchOps() ([]int, []uint32) {
	rng := rand.New(rand.NewPCG(1, 2))
	widths := make([]int, 100)
	values := make([]uint32, 100)
	for i := range widths {
		widths[i] = 1 + i%32
		values[i] = rng.Uint32() & (1<<widths[i] - 1)
	}
	return widths, values
}

func BenchmarkWriter(b *testing.B) {
	widths, values := benchOps()
	total := 0
	for _, n := range widths {
		total += n
	}
	b.SetBytes(int64((total + 7) / 8))
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	var w bitpack.Writer
	for b.Loop() {
		w.Reset(buf)
		for i, n := range widths {
			w.WriteBits(values[i], n)
		}
		if _, err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReader(b *testing.B) {
	widths, values := benchOps()
	var w bitpack.Writer
	for i, n := range widths {
		w.WriteBits(values[i], n)
	}
	in, _ := w.Flush()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var r bitpack.Reader
	var sum uint32
	for b.Loop() {
		r.Reset(in)
		for _, n := range widths {
			v, _ := r.ReadBits(n)
			sum += v
		}
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	_ = sum
}
