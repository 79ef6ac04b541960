package qos

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestVectors(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		t.Run(name, func(t *testing.T) {
			switch v.Kind {
			case "request":
				var r Request
				if err := r.Decode(v.Bytes); err != nil {
					t.Fatalf("Decode: got %v, want nil", err)
				}
				out, err := r.AppendTo(nil)
				if err != nil || !bytes.Equal(out, v.Bytes) {
					t.Fatalf("AppendTo: got %x (%v), want %x", out, err, v.Bytes)
				}
			case "response":
				var r Response
				if err := r.Decode(v.Bytes); err != nil {
					t.Fatalf("Decode: got %v, want nil", err)
				}
				out, err := r.AppendTo(nil)
				if err != nil || !bytes.Equal(out, v.Bytes) {
					t.Fatalf("AppendTo: got %x (%v), want %x", out, err, v.Bytes)
				}
			case "bad-request":
				var r Request
				err := r.Decode(v.Bytes)
				var de *wire.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("Decode: got %v, want a *wire.DecodeError", err)
				}
			case "bad-response":
				var r Response
				err := r.Decode(v.Bytes)
				var de *wire.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("Decode: got %v, want a *wire.DecodeError", err)
				}
			default:
				t.Fatalf("unknown vector kind %q", v.Kind)
			}
		})
	}
}

func TestTitleWao(t *testing.T) {
	v := testutil.Vectors(t)["title-wao"]
	var r Request
	if err := r.Decode(v.Bytes); err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.Title), "ワオ"; got != want {
		t.Fatalf("title: got %q, want %q", got, want)
	}
	if len(r.Custom) != 0 {
		t.Fatalf("custom: got %x, want none", r.Custom)
	}
}

// The shipped Unity client's layout: the response's bytes after the version
// byte are exactly the request's bytes after the title.
func TestUnityLayoutEcho(t *testing.T) {
	vs := testutil.Vectors(t)
	var req Request
	if err := req.Decode(vs["unity-request"].Bytes); err != nil {
		t.Fatal(err)
	}
	if got, want := string(req.Title), "QoS request"; got != want {
		t.Fatalf("title: got %q, want %q", got, want)
	}
	if got, want := req.Custom[0], byte(3); got != want {
		t.Fatalf("sequence: got %d, want %d", got, want)
	}
	if got, want := binary.LittleEndian.Uint16(req.Custom[1:]), uint16(0xBEEF); got != want {
		t.Fatalf("identifier: got %#x, want %#x", got, want)
	}
	if got, want := binary.LittleEndian.Uint64(req.Custom[3:]), uint64(1700000000123); got != want {
		t.Fatalf("timestamp: got %d, want %d", got, want)
	}
	resp := AppendResponse(nil, FlowNone, req.Custom)
	if want := vs["unity-response"].Bytes; !bytes.Equal(resp, want) {
		t.Fatalf("response: got %x, want %x", resp, want)
	}
}

func TestRequestErrors(t *testing.T) {
	valid := testutil.Vectors(t)["unity-request"].Bytes
	tests := []struct {
		name  string
		in    []byte
		want  error
		field string
	}{
		{"empty", nil, wire.ErrTruncated, "header"},
		{"magic", append([]byte{0x95}, valid[1:]...), wire.ErrMagic, "type"},
		{"flow nibble", append([]byte{0x59, 0x08}, valid[2:]...), ErrRequestFlow, "flow control"},
		{"version nibble", append([]byte{0x59, 0x10}, valid[2:]...), ErrVersion, "version"},
		{"title length zero", []byte{0x59, 0x00, 0x00}, wire.ErrRange, "title length"},
		{"title past end", []byte{0x59, 0x00, 0xff, 'a'}, wire.ErrTruncated, "title length"},
		{"title not utf-8", []byte{0x59, 0x00, 0x02, 0xff}, ErrTitleEncoding, "title"},
		{"1501 bytes", append([]byte{0x59, 0x00, 0x01}, make([]byte, 1498)...), wire.ErrTooLong, "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			err := r.Decode(tt.in)
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field {
				t.Fatalf("got %v, want %v on field %q", err, tt.want, tt.field)
			}
		})
	}
	t.Run("1500 bytes is accepted", func(t *testing.T) {
		var r Request
		in := append([]byte{0x59, 0x00, 0x01}, make([]byte, 1497)...)
		if err := r.Decode(in); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
	})
}

// Every proper prefix of a valid request either fails cleanly or is itself a
// shorter valid request (the custom data has no length of its own).
func TestRequestTruncation(t *testing.T) {
	valid := testutil.Vectors(t)["unity-request"].Bytes
	titleEnd := 3 + len("QoS request")
	for n := 0; n < len(valid); n++ {
		var r Request
		err := r.Decode(valid[:n])
		switch {
		case n < titleEnd && err == nil:
			t.Fatalf("prefix of %d bytes: got nil error, want one", n)
		case n >= titleEnd && (err != nil || len(r.Custom) != n-titleEnd):
			t.Fatalf("prefix of %d bytes: got %v with %d custom bytes, want %d", n, err, len(r.Custom), n-titleEnd)
		}
	}
}

func TestFlowControl(t *testing.T) {
	tests := []struct {
		name    string
		f       FlowControl
		ban     bool
		backoff bool
		units   int
	}{
		{"none", FlowNone, false, false, 0},
		{"ban 1000b", 0x8, true, false, 1},
		{"ban 1001b", 0x9, true, false, 2},
		{"ban 1111b", 0xF, true, false, 8},
		{"back-off 0010b", 0x2, false, true, 2},
		{"back-off 0111b", 0x7, false, true, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.IsBan(); got != tt.ban {
				t.Fatalf("IsBan: got %v, want %v", got, tt.ban)
			}
			if got := tt.f.IsBackoff(); got != tt.backoff {
				t.Fatalf("IsBackoff: got %v, want %v", got, tt.backoff)
			}
			if got := tt.f.Units(); got != tt.units {
				t.Fatalf("Units: got %d, want %d", got, tt.units)
			}
			if got, want := tt.f.Duration(), time.Duration(tt.units)*2*time.Minute; got != want {
				t.Fatalf("Duration: got %v, want %v", got, want)
			}
		})
	}
	for u := 1; u <= 8; u++ {
		f, err := Ban(u)
		if err != nil || !f.IsBan() || f.Units() != u {
			t.Fatalf("Ban(%d): got %#x units %d (%v), want a ban of %d units", u, f, f.Units(), err, u)
		}
	}
	for u := 1; u <= 7; u++ {
		f, err := Backoff(u)
		if err != nil || !f.IsBackoff() || f.Units() != u {
			t.Fatalf("Backoff(%d): got %#x units %d (%v), want a back-off of %d units", u, f, f.Units(), err, u)
		}
	}
	for _, u := range []int{0, 9, -1} {
		if _, err := Ban(u); err == nil {
			t.Fatalf("Ban(%d): got nil error, want one", u)
		}
	}
	for _, u := range []int{0, 8} {
		if _, err := Backoff(u); err == nil {
			t.Fatalf("Backoff(%d): got nil error, want one", u)
		}
	}
}

func TestEncoderRefusals(t *testing.T) {
	long := bytes.Repeat([]byte("a"), MaxTitle+1)
	for _, r := range []Request{
		{Title: long},
		{Title: []byte{0xff}},
		{Version: 16},
		{Custom: make([]byte, MaxPacket)},
	} {
		if _, err := r.AppendTo(nil); err == nil {
			t.Fatalf("AppendTo(%d-byte title, version %d, %d custom bytes): got nil error, want one", len(r.Title), r.Version, len(r.Custom))
		}
	}
	r := Request{Title: bytes.Repeat([]byte("a"), MaxTitle)}
	if _, err := r.AppendTo(nil); err != nil {
		t.Fatalf("254-byte title: got %v, want nil", err)
	}
	resp := Response{Custom: make([]byte, MaxPacket-1)}
	if _, err := resp.AppendTo(nil); err == nil {
		t.Fatal("1501-byte response: got nil error, want one")
	}
}

func TestZeroAllocs(t *testing.T) {
	in := testutil.Vectors(t)["unity-request"].Bytes
	bad := []byte{0x59, 0x01, 0x01}
	out := make([]byte, 0, MaxPacket)
	var req Request
	var resp Response
	allocs := testing.AllocsPerRun(1000, func() {
		if err := req.Decode(in); err != nil {
			panic(err)
		}
		out = AppendResponse(out[:0], FlowNone, req.Custom)
		if err := resp.Decode(out); err != nil {
			panic(err)
		}
		_ = req.Decode(bad)
		o, _ := req.AppendTo(out[:0])
		out = o
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per decode/encode round, want 0", allocs)
	}
}

func FuzzRequest(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		var r Request
		if !testutil.Decodes(t, in, r.Decode) {
			return
		}
		if !LooksLikeRequest(in) {
			t.Fatalf("LooksLikeRequest refuses %x, which decodes", in)
		}
		out, err := r.AppendTo(nil)
		if err != nil {
			t.Fatalf("re-encoding a decoded request: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("decode → encode changed the bytes: got %x, want %x", out, in)
		}
		resp := AppendResponse(nil, FlowNone, r.Custom)
		if len(resp) >= len(in) {
			t.Fatalf("response of %d bytes to a request of %d: want smaller", len(resp), len(in))
		}
		var back Response
		if err := back.Decode(resp); err != nil || !bytes.Equal(back.Custom, r.Custom) {
			t.Fatalf("response round trip: got %x (%v), want %x", back.Custom, err, r.Custom)
		}
	})
}

func FuzzResponse(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		var r Response
		if !testutil.Decodes(t, in, r.Decode) {
			return
		}
		testutil.Reencodes(t, in, r.AppendTo)
	})
}

func BenchmarkRequestDecode(b *testing.B) {
	var r Request
	testutil.BenchDecode(b, testutil.Vectors(b)["unity-request"].Bytes, r.Decode)
}

func BenchmarkResponseEncode(b *testing.B) {
	in := testutil.Vectors(b)["unity-request"].Bytes
	var r Request
	if err := r.Decode(in); err != nil {
		b.Fatal(err)
	}
	out := make([]byte, 0, MaxPacket)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		out = AppendResponse(out[:0], FlowNone, r.Custom)
	}
}

func BenchmarkResponseDecode(b *testing.B) {
	var r Response
	testutil.BenchDecode(b, testutil.Vectors(b)["unity-response"].Bytes, r.Decode)
}

func TestLooksLikeRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty title", []byte{0x59, 0x00, 0x01}, true},
		{"title and custom", []byte{0x59, 0x00, 0x03, 'a', 'b', 1, 2}, true},
		{"title not UTF-8 (Decode's to refuse)", []byte{0x59, 0x00, 0x02, 0xFF}, true},
		{"short", []byte{0x59, 0x00}, false},
		{"response magic", []byte{0x95, 0x00, 0x01}, false},
		{"version 1", []byte{0x59, 0x10, 0x01}, false},
		{"flow set", []byte{0x59, 0x01, 0x01}, false},
		{"title length zero", []byte{0x59, 0x00, 0x00}, false},
		{"title past the end", []byte{0x59, 0x00, 0x03, 'a'}, false},
		{"1501 bytes", append([]byte{0x59, 0x00, 0x01}, make([]byte, MaxPacket-2)...), false},
		{"1500 bytes", append([]byte{0x59, 0x00, 0x01}, make([]byte, MaxPacket-3)...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksLikeRequest(tc.in); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
