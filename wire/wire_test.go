package wire

import (
	"errors"
	"testing"
)

func TestReaderReadsFields(t *testing.T) {
	in := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b}
	r := NewReader(in)
	if got, want := r.U8("a"), uint8(0x01); got != want {
		t.Fatalf("U8: got %#x, want %#x", got, want)
	}
	if got, want := r.U16BE("b"), uint16(0x0203); got != want {
		t.Fatalf("U16BE: got %#x, want %#x", got, want)
	}
	if got, want := r.U16LE("c"), uint16(0x0504); got != want {
		t.Fatalf("U16LE: got %#x, want %#x", got, want)
	}
	if got, want := r.U32BE("d"), uint32(0x06070809); got != want {
		t.Fatalf("U32BE: got %#x, want %#x", got, want)
	}
	if got, want := r.Len(), 2; got != want {
		t.Fatalf("Len: got %d, want %d", got, want)
	}
	b := r.Bytes("e", 2)
	if len(b) != 2 || &b[0] != &in[9] {
		t.Fatalf("Bytes: got %v, want an alias of the input's last two bytes", b)
	}
	if r.Err() != nil {
		t.Fatalf("Err: got %v, want nil", r.Err())
	}
}

func TestReaderStopsAtEnd(t *testing.T) {
	tests := []struct {
		name string
		read func(r *Reader)
	}{
		{"U8", func(r *Reader) { r.U8("f") }},
		{"U16BE", func(r *Reader) { r.U16BE("f") }},
		{"U16LE", func(r *Reader) { r.U16LE("f") }},
		{"U32BE", func(r *Reader) { r.U32BE("f") }},
		{"U32LE", func(r *Reader) { r.U32LE("f") }},
		{"U64LE", func(r *Reader) { r.U64LE("f") }},
		{"U64BE", func(r *Reader) { r.U64BE("f") }},
		{"Bytes", func(r *Reader) { r.Bytes("f", 9) }},
		{"BytesNegative", func(r *Reader) { r.Bytes("f", -1) }},
		{"Skip", func(r *Reader) { r.Skip("f", 9) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader([]byte{1})
			r.U8("first")
			tt.read(&r)
			err := r.Err()
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("got %v, want ErrTruncated", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Field != "f" || de.Offset != 1 {
				t.Fatalf("got %#v, want DecodeError{Field: f, Offset: 1}", de)
			}
			// The error is sticky: later reads return zero values.
			if got := r.U8("later"); got != 0 {
				t.Fatalf("read after error: got %d, want 0", got)
			}
			if r.Err() != err {
				t.Fatalf("error changed after a later read: got %v, want %v", r.Err(), err)
			}
		})
	}
}

func TestReaderRangeChecks(t *testing.T) {
	r := NewReader([]byte{7, 0x01, 0x00})
	if got := r.U8Range("small", 0, 6); got != 0 {
		t.Fatalf("got %d, want 0 for an out-of-range value", got)
	}
	var de *DecodeError
	if err := r.Err(); !errors.Is(err, ErrRange) || !errors.As(err, &de) || de.Field != "small" || de.Offset != 0 {
		t.Fatalf("got %v, want a range error on field small at offset 0", err)
	}
	r.Reset([]byte{0x01, 0x00})
	if got, want := r.U16BERange("len", 0, 512), uint16(256); got != want || r.Err() != nil {
		t.Fatalf("got %d (%v), want %d", got, r.Err(), want)
	}
}

func TestWindows1252RoundTrip(t *testing.T) {
	for _, s := range []string{"plain", "Café ©", "€5 – “quoted” ™ Ÿ", "Ça va"} {
		b := EncodeWindows1252(nil, s)
		if got := string(AppendWindows1252(nil, b)); got != s {
			t.Errorf("got %q, want %q", got, s)
		}
	}
	if got := string(AppendWindows1252(nil, []byte{0x81, 0xE9, 0x80})); got != "\uFFFDé€" {
		t.Errorf("got %q, want \uFFFDé€", got)
	}
	if got := EncodeWindows1252(nil, "日"); string(got) != "?" {
		t.Errorf("got %q, want ?", got)
	}
}

func TestAppendWindows1252Allocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendWindows1252(buf[:0], []byte("caf\xe9 \x80")) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

func TestPeekU8(t *testing.T) {
	r := NewReader([]byte{7})
	if v, ok := r.PeekU8(); !ok || v != 7 || r.Offset() != 0 {
		t.Errorf("got %d, %v at offset %d; want 7, true at 0", v, ok, r.Offset())
	}
	r.Skip("x", 1)
	if _, ok := r.PeekU8(); ok {
		t.Error("at the end: got ok")
	}
}
