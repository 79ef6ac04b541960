package freeciv

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

// packet builds an ordinary packet for a test, failing it on error.
func packet(t testing.TB, width int, ptype uint16, body string) []byte {
	t.Helper()
	p, err := AppendPacket(nil, width, ptype, []byte(body))
	if err != nil {
		t.Fatalf("AppendPacket(%d, %#x, %d bytes): %v", width, ptype, len(body), err)
	}
	return p
}

func TestVectors(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		t.Run(name, func(t *testing.T) {
			switch v.Kind {
			case "join-req":
				reencodes(t, v.Bytes, new(JoinReq))
			case "join-reply":
				reencodes(t, v.Bytes, new(JoinReply))
			case "packet1", "packet2", "chunk", "jumbo", "delta":
				// Checked by the tests that know their contents.
			case "lan-request":
				if err := DecodeLANRequest(v.Bytes); err != nil {
					t.Fatalf("DecodeLANRequest: got %v, want nil", err)
				}
				if got := AppendLANRequest(nil); !bytes.Equal(got, v.Bytes) {
					t.Fatalf("AppendLANRequest: got %x, want %x", got, v.Bytes)
				}
			case "lan":
				reencodes(t, v.Bytes, new(LANAnnouncement))
			default:
				t.Fatalf("unknown vector kind %q", v.Kind)
			}
		})
	}
}

// reencodes checks a valid vector: m decodes it, re-encodes it exactly,
// and its Len says so.
func reencodes(t *testing.T, in []byte, m testutil.Codec) {
	t.Helper()
	if err := m.Decode(in); err != nil {
		t.Fatalf("Decode: got %v, want nil", err)
	}
	testutil.Reencodes(t, in, m.AppendTo)
	if got, want := m.Len(), len(in); got != want {
		t.Fatalf("Len: got %v, want %v", got, want)
	}
}

func TestJoinReqProbe(t *testing.T) {
	want := testutil.Vectors(t)["join-req-probe"].Bytes
	m := JoinReq{Username: []byte("probe"), Capability: []byte("+Freeciv-3.0-network"), Major: 3, Patch: 6}
	out, err := m.AppendTo(nil)
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("AppendTo: got %x (%v), want %x", out, err, want)
	}
	var back JoinReq
	if err := back.Decode(want); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"username", string(back.Username), "probe"},
		{"capability", string(back.Capability), "+Freeciv-3.0-network"},
		{"version_label", string(back.VersionLabel), ""},
	} {
		if c.got != c.want {
			t.Fatalf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if back.Major != 3 || back.Minor != 0 || back.Patch != 6 {
		t.Fatalf("version: got %d.%d.%d, want 3.0.6", back.Major, back.Minor, back.Patch)
	}
}

func TestJoinReplyFields(t *testing.T) {
	vs := testutil.Vectors(t)
	tests := []struct {
		name    string
		join    bool
		message string
		connID  int16
	}{
		{"join-reply-accept", true, "Welcome", 1},
		{"join-reply-refuse", false, "Refused", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m JoinReply
			if err := m.Decode(vs[tt.name].Bytes); err != nil {
				t.Fatal(err)
			}
			if m.YouCanJoin != tt.join || string(m.Message) != tt.message || m.ConnID != tt.connID {
				t.Fatalf("got %v %q %d, want %v %q %d", m.YouCanJoin, m.Message, m.ConnID, tt.join, tt.message, tt.connID)
			}
			if got, want := string(m.Capability), "+Freeciv-3.0-network"; got != want {
				t.Fatalf("capability: got %q, want %q", got, want)
			}
		})
	}
}

// Every proper prefix of a join packet or LAN announcement fails cleanly;
// the length field makes a prefix of a packet inconsistent.
func TestTruncation(t *testing.T) {
	vs := testutil.Vectors(t)
	decoders := map[string]func([]byte) error{
		"join-req-probe":    func(b []byte) error { var m JoinReq; return m.Decode(b) },
		"join-reply-accept": func(b []byte) error { var m JoinReply; return m.Decode(b) },
		"join-reply-refuse": func(b []byte) error { var m JoinReply; return m.Decode(b) },
		"lan-announcement":  func(b []byte) error { var a LANAnnouncement; return a.Decode(b) },
		"lan-request":       DecodeLANRequest,
	}
	for name, decode := range decoders {
		t.Run(name, func(t *testing.T) {
			valid := vs[name].Bytes
			for n := range len(valid) {
				err := decode(valid[:n])
				var de *wire.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("prefix of %d bytes: got %v, want a *wire.DecodeError", n, err)
				}
			}
		})
	}
}

func TestJoinErrors(t *testing.T) {
	vs := testutil.Vectors(t)
	req := vs["join-req-probe"].Bytes
	reply := vs["join-reply-accept"].Bytes
	with := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	long := func(b []byte) []byte { // one byte more than the fields, length fixed up
		c := append(bytes.Clone(b), 0)
		c[1]++
		return c
	}
	tests := []struct {
		name   string
		decode func([]byte) error
		in     []byte
		want   error
		field  string
	}{
		{"req length short", decodeReq, with(req, 1, 0x2a), wire.ErrTooLong, "length"},
		{"req length long", decodeReq, with(req, 1, 0x2c), wire.ErrTruncated, "length"},
		{"req type", decodeReq, with(req, 2, 5), ErrType, "type"},
		{"req trailing byte", decodeReq, long(req), wire.ErrTooLong, "packet"},
		{"req username unterminated", decodeReq, reqWith(strings.Repeat("u", MaxLenName), "c"), wire.ErrTooLong, "username"},
		{"req capability unterminated", decodeReq, reqWith("u", strings.Repeat("c", MaxLenCapstr)), wire.ErrTooLong, "capability"},
		{"reply bool 2", decodeReply, with(reply, 3, 2), wire.ErrRange, "you_can_join"},
		{"reply type", decodeReply, with(reply, 2, 4), ErrType, "type"},
		{"reply trailing byte", decodeReply, long(reply), wire.ErrTooLong, "packet"},
		{"reply over MaxLenPacket", decodeReply, append(with(reply, 0, 0), make([]byte, MaxLenPacket)...), wire.ErrTooLong, "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode(tt.in)
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field {
				t.Fatalf("got %v, want %v on field %q", err, tt.want, tt.field)
			}
		})
	}
}

func decodeReq(b []byte) error   { var m JoinReq; return m.Decode(b) }
func decodeReply(b []byte) error { var m JoinReply; return m.Decode(b) }

// reqWith builds a JOIN_REQ around a username and capability that may break
// their bounds, bypassing AppendTo's checks.
func reqWith(user, capability string) []byte {
	body := append([]byte(user), 0)
	body = append(body, capability...)
	body = append(body, 0, 0)
	body = append(body, make([]byte, 12)...)
	p, _ := AppendPacket(nil, 1, PacketServerJoinReq, body)
	return p
}

func TestJoinEncoderRefusals(t *testing.T) {
	tests := []struct {
		name string
		m    interface{ AppendTo([]byte) ([]byte, error) }
	}{
		{"username too long", &JoinReq{Username: bytes.Repeat([]byte("u"), MaxLenName)}},
		{"username with NUL", &JoinReq{Username: []byte("a\x00b")}},
		{"capability too long", &JoinReq{Capability: bytes.Repeat([]byte("c"), MaxLenCapstr)}},
		{"label too long", &JoinReq{VersionLabel: bytes.Repeat([]byte("l"), MaxLenName)}},
		{"message too long", &JoinReply{Message: bytes.Repeat([]byte("m"), MaxLenMsg)}},
		{"reply over MaxLenPacket", &JoinReply{Message: bytes.Repeat([]byte("m"), MaxLenMsg-1), ChallengeFile: bytes.Repeat([]byte("f"), MaxLenPath-1)}},
	}
	prefix := []byte{0xAA}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.m.AppendTo(prefix)
			if err == nil || !bytes.Equal(out, prefix) {
				t.Fatalf("got %x (%v), want %x and an error", out, err, prefix)
			}
		})
	}
	largest := JoinReq{
		Username:     bytes.Repeat([]byte("u"), MaxLenName-1),
		Capability:   bytes.Repeat([]byte("c"), MaxLenCapstr-1),
		VersionLabel: bytes.Repeat([]byte("l"), MaxLenName-1),
	}
	out, err := largest.AppendTo(nil)
	if err != nil || len(out) != MaxJoinReqLen {
		t.Fatalf("largest JOIN_REQ: got %d bytes (%v), want %d", len(out), err, MaxJoinReqLen)
	}
	if ok, more := PlausibleJoinReq(out); !ok || more {
		t.Fatalf("PlausibleJoinReq(largest): got %v, %v, want true, false", ok, more)
	}
}

func TestPlausibleJoinReq(t *testing.T) {
	vs := testutil.Vectors(t)
	req := vs["join-req-probe"].Bytes
	tests := []struct {
		name     string
		in       []byte
		ok, more bool
	}{
		{"empty", nil, false, true},
		{"probe", req, true, false},
		{"probe then more bytes", append(bytes.Clone(req), 0x00, 0x05, 0x07), true, false},
		{"length below minimum", []byte{0x00, MinJoinReqLen - 1}, false, false},
		{"length above maximum", []byte{0x02, 0x70}, false, false},
		{"http", []byte("GET / HTTP/1.1\r\n"), false, false},
		{"tls", []byte{0x16, 0x03, 0x01, 0x02, 0x00}, false, false},
		{"type 5", append([]byte{0x00, 0x2b, 0x05}, req[3:]...), false, false},
		{"join reply", vs["join-reply-accept"].Bytes, false, false},
		{"strings end early", append([]byte{0x00, 0x2c, 0x04}, append(bytes.Clone(req[3:]), 0)...), false, false},
		{"username unterminated", reqWith(strings.Repeat("u", 100), ""), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, more := PlausibleJoinReq(tt.in)
			if ok != tt.ok || more != tt.more {
				t.Fatalf("got %v, %v, want %v, %v", ok, more, tt.ok, tt.more)
			}
		})
	}
	t.Run("every prefix needs more", func(t *testing.T) {
		for n := range len(req) {
			if ok, more := PlausibleJoinReq(req[:n]); ok || !more {
				t.Fatalf("prefix of %d bytes: got %v, %v, want false, true", n, ok, more)
			}
		}
	})
	t.Run("a long username prefix is already refused", func(t *testing.T) {
		in := reqWith(strings.Repeat("u", 100), "")[:60]
		if ok, more := PlausibleJoinReq(in); ok || more {
			t.Fatalf("got %v, %v, want false, false", ok, more)
		}
	})
}

func TestDataReader(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		read  func(r *DataReader) any
		want  any
		err   error
		off   int
		field string
	}{
		{"bool 0", []byte{0}, func(r *DataReader) any { return r.Bool("b") }, false, nil, 0, ""},
		{"bool 1", []byte{1}, func(r *DataReader) any { return r.Bool("b") }, true, nil, 0, ""},
		{"bool 2", []byte{2}, func(r *DataReader) any { return r.Bool("b") }, false, wire.ErrRange, 0, "b"},
		{"bool empty", nil, func(r *DataReader) any { return r.Bool("b") }, false, wire.ErrTruncated, 0, "b"},
		{"sint16", []byte{0xff, 0xfe}, func(r *DataReader) any { return r.S16("s") }, int16(-2), nil, 0, ""},
		{"sint32", []byte{0x80, 0, 0, 0}, func(r *DataReader) any { return r.S32("s") }, int32(-1 << 31), nil, 0, ""},
		{"sint8", []byte{0x80}, func(r *DataReader) any { return r.S8("s") }, int8(-128), nil, 0, ""},
		{"string", []byte("ab\x00c"), func(r *DataReader) any { return string(r.String("s", 3)) }, "ab", nil, 0, ""},
		{"string empty", []byte{0}, func(r *DataReader) any { return string(r.String("s", 1)) }, "", nil, 0, ""},
		{"string at bound", []byte("abc\x00"), func(r *DataReader) any { return string(r.String("s", 3)) }, "", wire.ErrTooLong, 0, "s"},
		{"string unterminated", []byte("ab"), func(r *DataReader) any { return string(r.String("s", 3)) }, "", wire.ErrTruncated, 0, "s"},
		{"string size 0", []byte{0}, func(r *DataReader) any { return string(r.String("s", 0)) }, "", wire.ErrRange, 0, "s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewDataReader(tt.in)
			got := tt.read(&r)
			if got != tt.want {
				t.Fatalf("value: got %v, want %v", got, tt.want)
			}
			err := r.Err()
			if tt.err == nil {
				if err != nil {
					t.Fatalf("error: got %v, want nil", err)
				}
				return
			}
			var de *wire.DecodeError
			if !errors.Is(err, tt.err) || !errors.As(err, &de) || de.Field != tt.field || de.Offset != tt.off {
				t.Fatalf("error: got %v, want %v on field %q at %d", err, tt.err, tt.field, tt.off)
			}
		})
	}
	t.Run("string consumes its NUL", func(t *testing.T) {
		r := NewDataReader([]byte("a\x00b\x00"))
		a, b := r.String("a", 8), r.String("b", 8)
		if string(a) != "a" || string(b) != "b" || r.Len() != 0 || r.Err() != nil {
			t.Fatalf("got %q %q with %d left (%v), want \"a\" \"b\" with 0 left", a, b, r.Len(), r.Err())
		}
	})
}

func TestAppendHelpers(t *testing.T) {
	var b []byte
	b = AppendBool(b, true)
	b = AppendBool(b, false)
	b = AppendU16(b, 0x0102)
	b = AppendU32(b, 0x03040506)
	b = AppendS16(b, -2)
	b = AppendS32(b, -3)
	b, err := AppendString(b, "hi", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 0, 1, 2, 3, 4, 5, 6, 0xff, 0xfe, 0xff, 0xff, 0xff, 0xfd, 'h', 'i', 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("got %x, want %x", b, want)
	}
	for _, tt := range []struct {
		name string
		s    string
		size int
	}{{"too long", "abc", 3}, {"NUL inside", "a\x00", 8}, {"size 0", "", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AppendString([]byte{9}, tt.s, tt.size)
			if err == nil || !bytes.Equal(out, []byte{9}) {
				t.Fatalf("got %x (%v), want 09 and an error", out, err)
			}
		})
	}
}

func TestAppendPacket(t *testing.T) {
	tests := []struct {
		name  string
		width int
		ptype uint16
		body  int
		want  []byte // the header, when no error is expected
	}{
		{"width 1", 1, 7, 2, []byte{0, 5, 7}},
		{"width 2", 2, 0x102, 3, []byte{0, 7, 1, 2}},
		{"width 1 largest", 1, 0xff, MaxLenPacket - 3, []byte{0x10, 0, 0xff}},
		{"width 2 largest", 2, 0xffff, MaxLenPacket - 4, []byte{0x10, 0, 0xff, 0xff}},
		{"width 1 too long", 1, 0, MaxLenPacket - 2, nil},
		{"width 2 too long", 2, 0, MaxLenPacket - 3, nil},
		{"chunk-sized", 2, 0, CompressionBorder, nil},
		{"type beyond width 1", 1, 0x100, 0, nil},
		{"width 3", 3, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AppendPacket([]byte{0xAA}, tt.width, tt.ptype, make([]byte, tt.body))
			if tt.want == nil {
				if err == nil || !bytes.Equal(out, []byte{0xAA}) {
					t.Fatalf("got %d bytes (%v), want aa and an error", len(out), err)
				}
				return
			}
			if err != nil || !bytes.Equal(out[1:1+len(tt.want)], tt.want) || len(out) != 1+len(tt.want)+tt.body {
				t.Fatalf("got header %x, %d bytes (%v), want %x, %d bytes", out[1:min(len(out), 1+len(tt.want))], len(out)-1, err, tt.want, len(tt.want)+tt.body)
			}
		})
	}
	vs := testutil.Vectors(t)
	if got, want := packet(t, 1, 7, "hi"), vs["packet-width1"].Bytes; !bytes.Equal(got, want) {
		t.Fatalf("packet-width1: got %x, want %x", got, want)
	}
	if got, want := packet(t, 2, 0x102, "abc"), vs["packet-width2"].Bytes; !bytes.Equal(got, want) {
		t.Fatalf("packet-width2: got %x, want %x", got, want)
	}
}

func TestLANErrors(t *testing.T) {
	valid := testutil.Vectors(t)["lan-announcement"].Bytes
	tests := []struct {
		name   string
		decode func([]byte) error
		in     []byte
		want   error
		field  string
	}{
		{"request version", DecodeLANRequest, []byte{3}, wire.ErrRange, "version"},
		{"request long", DecodeLANRequest, []byte{2, 2}, wire.ErrTooLong, "request"},
		{"announcement version", decodeLAN, append([]byte{1}, valid[1:]...), wire.ErrRange, "version"},
		{"announcement trailing", decodeLAN, append(bytes.Clone(valid), 'x'), wire.ErrTooLong, "packet"},
		{"announcement too long", decodeLAN, append(bytes.Clone(valid), make([]byte, MaxLANAnnouncement)...), wire.ErrTooLong, "announcement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode(tt.in)
			var de *wire.DecodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &de) || de.Field != tt.field {
				t.Fatalf("got %v, want %v on field %q", err, tt.want, tt.field)
			}
		})
	}
	var a LANAnnouncement
	if err := a.Decode(valid); err != nil {
		t.Fatal(err)
	}
	if string(a.Hostname) != "host" || string(a.Port) != "5556" || string(a.Version) != "3.0.6" ||
		string(a.Status) != "Pregame" || string(a.Players) != "1" || string(a.Humans) != "1" || len(a.Message) != 0 {
		t.Fatalf("got %q %q %q %q %q %q %q, want host 5556 3.0.6 Pregame 1 1 \"\"",
			a.Hostname, a.Port, a.Version, a.Status, a.Players, a.Humans, a.Message)
	}
	big := LANAnnouncement{Message: make([]byte, MaxLANAnnouncement)}
	if out, err := big.AppendTo(nil); err == nil {
		t.Fatalf("oversized announcement: got %d bytes, want an error", len(out))
	}
}

func decodeLAN(b []byte) error { var a LANAnnouncement; return a.Decode(b) }

func TestCodecZeroAllocs(t *testing.T) {
	vs := testutil.Vectors(t)
	req, reply, lan := vs["join-req-probe"].Bytes, vs["join-reply-accept"].Bytes, vs["lan-announcement"].Bytes
	out := make([]byte, 0, MaxLenPacket)
	var mr JoinReq
	var mp JoinReply
	var a LANAnnouncement
	allocs := testing.AllocsPerRun(1000, func() {
		if mr.Decode(req) != nil || mp.Decode(reply) != nil || a.Decode(lan) != nil {
			panic("decode failed")
		}
		if ok, _ := PlausibleJoinReq(req); !ok {
			panic("implausible")
		}
		out, _ = mr.AppendTo(out[:0])
		out, _ = mp.AppendTo(out[:0])
		out, _ = a.AppendTo(out[:0])
		out, _ = AppendPacket(out[:0], 2, 0x102, req)
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per round, want 0", allocs)
	}
}
