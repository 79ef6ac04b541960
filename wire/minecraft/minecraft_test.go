package minecraft

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestVarInt(t *testing.T) {
	for _, v := range testutil.Vectors(t) {
		if v.Kind != "varint" {
			continue
		}
		want, _ := strconv.ParseInt(v.Name, 10, 32)
		if got := AppendVarInt(nil, int32(want)); !bytes.Equal(got, v.Bytes) || VarIntLen(int32(want)) != len(v.Bytes) {
			t.Errorf("%d: got %x, want %x", want, got, v.Bytes)
		}
		got, n, err := ReadVarInt(v.Bytes)
		if err != nil || int64(got) != want || n != len(v.Bytes) {
			t.Errorf("%x: got %d, %d, %v; want %d", v.Bytes, got, n, err, want)
		}
		for i := range v.Bytes {
			if _, _, err := ReadVarInt(v.Bytes[:i]); !errors.Is(err, wire.ErrTruncated) {
				t.Errorf("%x[:%d]: got %v, want ErrTruncated", v.Bytes, i, err)
			}
		}
	}
	if _, _, err := ReadVarInt([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}); !errors.Is(err, ErrVarIntTooLong) {
		t.Errorf("six bytes: got %v", err)
	}
}

func TestRequests(t *testing.T) {
	v := testutil.Vectors(t)
	hs, err := AppendHandshake(nil, 47, "localhost", 25565, NextStateStatus)
	if err != nil || !bytes.Equal(hs, v["handshake-47"].Bytes) {
		t.Errorf("handshake: got %x, want %x", hs, v["handshake-47"].Bytes)
	}
	if got := AppendStatusRequest(nil); !bytes.Equal(got, v["status-request"].Bytes) {
		t.Errorf("status request: got %x", got)
	}
	if got := AppendPing(nil, 0x0102030405060708); !bytes.Equal(got, v["ping"].Bytes) {
		t.Errorf("ping: got %x", got)
	}
	if got, err := AppendLegacyPing(nil, "localhost", 25565); err != nil || !bytes.Equal(got, v["legacy-ping"].Bytes) {
		t.Errorf("legacy ping: got %x, want %x", got, v["legacy-ping"].Bytes)
	}
	if _, err := AppendHandshake(nil, 47, string(make([]byte, MaxHost+1)), 1, 1); err == nil {
		t.Error("a 256-byte host: got no error")
	}
}

func TestStatusResponse(t *testing.T) {
	for _, name := range []string{"status-component", "status-string"} {
		b := testutil.Vectors(t)[name].Bytes
		f, n, err := SplitFrame(b, 0)
		if err != nil || n != len(b) || f.ID != IDStatus {
			t.Fatalf("%s: got %+v, %d, %v", name, f, n, err)
		}
		json, err := DecodeStatusResponse(f.Data)
		if err != nil || json[0] != '{' || json[len(json)-1] != '}' {
			t.Fatalf("%s: got %q, %v", name, json, err)
		}
		again, _ := AppendStatusResponse(nil, json)
		if !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoded %x, want %x", name, again, b)
		}
		// Every prefix is incomplete, never an error or a frame.
		for i := range b {
			if _, _, err := SplitFrame(b[:i], 0); !errors.Is(err, wire.ErrTruncated) {
				t.Fatalf("%s[:%d]: got %v, want ErrTruncated", name, i, err)
			}
		}
	}
	f, _, _ := SplitFrame(testutil.Vectors(t)["ping"].Bytes, 0)
	if v, err := DecodePong(f.Data); err != nil || v != 0x0102030405060708 {
		t.Errorf("pong: got %x, %v", v, err)
	}
}

func TestBad(t *testing.T) {
	v := testutil.Vectors(t)
	for _, name := range []string{"bad-varint", "bad-zero-length"} {
		var de *wire.DecodeError
		if _, _, err := SplitFrame(v[name].Bytes, 0); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
	f, _, err := SplitFrame(v["bad-json-length"].Bytes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeStatusResponse(f.Data); !errors.Is(err, wire.ErrTruncated) {
		t.Errorf("bad-json-length: got %v", err)
	}
	big := AppendVarInt(nil, MaxFrame+1)
	if _, _, err := SplitFrame(big, 0); !errors.Is(err, wire.ErrRange) {
		t.Errorf("frame past MaxFrame: got %v, want ErrRange", err)
	}
	if _, _, err := SplitFrame(AppendVarInt(nil, 100), 64); !errors.Is(err, wire.ErrRange) {
		t.Errorf("frame past maxLen: got %v, want ErrRange", err)
	}
	// 32768 UTF-16 code units: one past the limit.
	long := append(append([]byte{'"'}, bytes.Repeat([]byte{'x'}, MaxStatusChars-1)...), '"')
	if _, err := AppendStatusResponse(nil, long); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("long JSON: got %v", err)
	}
	data := append(AppendVarInt(nil, int32(len(long))), long...)
	if _, err := DecodeStatusResponse(data); !errors.Is(err, wire.ErrRange) {
		t.Errorf("long JSON decode: got %v", err)
	}
	if _, err := DecodeStatusResponse(append(AppendVarInt(nil, 2), 0xC3, 0x28)); !errors.Is(err, wire.ErrRange) {
		t.Errorf("invalid UTF-8: got %v", err)
	}
}

func TestLegacy(t *testing.T) {
	v := testutil.Vectors(t)
	var s LegacyStatus
	if err := s.Decode(v["legacy-answer"].Bytes); err != nil {
		t.Fatal(err)
	}
	if string(s.Protocol) != "127" || string(s.Version) != "1.6.4" || string(s.MOTD) != "A Minecraft Server" ||
		string(s.Online) != "3" || string(s.Max) != "20" {
		t.Fatalf("got %q %q %q %q %q", s.Protocol, s.Version, s.MOTD, s.Online, s.Max)
	}
	again, _ := AppendLegacyAnswer(nil, "127", "1.6.4", "A Minecraft Server", "3", "20")
	if !bytes.Equal(again, v["legacy-answer"].Bytes) {
		t.Errorf("re-encoded %x", again)
	}
	if err := s.Decode(v["legacy-answer-beta"].Bytes); err != nil || string(s.MOTD) != "Old Server" ||
		string(s.Online) != "5" || string(s.Max) != "10" || s.Protocol != nil {
		t.Fatalf("beta: got %q %q %q (%v)", s.MOTD, s.Online, s.Max, err)
	}
	b := v["legacy-answer"].Bytes
	for i := range b {
		if err := s.Decode(b[:i]); !errors.Is(err, wire.ErrTruncated) {
			t.Fatalf("legacy[:%d]: got %v, want ErrTruncated", i, err)
		}
	}
	if err := s.Decode([]byte{0x00, 0x01}); !errors.Is(err, ErrNotLegacy) {
		t.Errorf("not FF: got %v", err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	v := testutil.Vectors(t)
	status := v["status-component"].Bytes
	legacy := v["legacy-answer"].Bytes
	var s LegacyStatus
	_ = s.Decode(legacy)
	allocs := testing.AllocsPerRun(100, func() {
		f, _, err := SplitFrame(status, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeStatusResponse(f.Data); err != nil {
			t.Fatal(err)
		}
		if err := s.Decode(legacy); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decode, want 0", allocs)
	}
}

func FuzzSplitFrame(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := SplitFrame(b, 0)
		if err != nil {
			var de *wire.DecodeError
			if !errors.Is(err, wire.ErrTruncated) && !errors.As(err, &de) {
				t.Fatalf("error %v is neither ErrTruncated nor a *wire.DecodeError", err)
			}
			return
		}
		if n > len(b) || n > MaxFrame+MaxVarIntLen || len(fr.Data) > n {
			t.Fatalf("frame of %d bytes from %d", n, len(b))
		}
		if fr.ID == IDStatus {
			if json, err := DecodeStatusResponse(fr.Data); err == nil {
				again, err := AppendStatusResponse(nil, json)
				if err != nil {
					t.Fatalf("decoded JSON does not encode: %v", err)
				}
				f2, _, err := SplitFrame(again, 0)
				if err != nil {
					t.Fatal(err)
				}
				j2, err := DecodeStatusResponse(f2.Data)
				if err != nil || !bytes.Equal(j2, json) {
					t.Fatalf("round trip: got %q, %v; want %q", j2, err, json)
				}
			}
		}
		_, _ = DecodePong(fr.Data)
	})
}

func FuzzLegacy(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s LegacyStatus
		if err := s.Decode(b); err != nil {
			var de *wire.DecodeError
			if !errors.Is(err, wire.ErrTruncated) && !errors.As(err, &de) {
				t.Fatalf("error %v is neither ErrTruncated nor a *wire.DecodeError", err)
			}
			return
		}
		if s.Protocol == nil || bytes.ContainsRune(s.MOTD, 0) {
			return // the pre-1.4 form has no encoder here
		}
		again, err := AppendLegacyAnswer(nil, string(s.Protocol), string(s.Version), string(s.MOTD), string(s.Online), string(s.Max))
		if err != nil {
			return
		}
		var s2 LegacyStatus
		if err := s2.Decode(again); err != nil || !bytes.Equal(s2.MOTD, s.MOTD) || !bytes.Equal(s2.Max, s.Max) {
			t.Fatalf("round trip: got %q (%v), want %q", s2.MOTD, err, s.MOTD)
		}
	})
}
