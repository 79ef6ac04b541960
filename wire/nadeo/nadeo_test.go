package nadeo

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestHandshake(t *testing.T) {
	v := testutil.Vectors(t)["handshake"].Bytes
	if err := CheckHandshake(v); err != nil {
		t.Fatal(err)
	}
	if got := AppendHandshake(nil); !bytes.Equal(got, v) {
		t.Errorf("AppendHandshake: got %x, want %x", got, v)
	}
	for n := range len(v) {
		var de *wire.DecodeError
		if err := CheckHandshake(v[:n]); !errors.As(err, &de) {
			t.Errorf("handshake[:%d]: got %v, want a *wire.DecodeError", n, err)
		}
	}
	v1 := append([]byte{11, 0, 0, 0}, "GBXRemote 1"...)
	if err := CheckHandshake(v1); !errors.Is(err, ErrVersion) {
		t.Errorf("GBXRemote 1: got %v, want ErrVersion", err)
	}
	if _, err := HandshakeLen([]byte{0xff, 0xff, 0xff, 0x7f}); !errors.Is(err, wire.ErrRange) {
		t.Errorf("a 2 GiB handshake: got %v, want ErrRange", err)
	}
}

func TestHeader(t *testing.T) {
	vs := testutil.Vectors(t)
	m := vs["message-options"].Bytes
	size, handle, err := Header(m, 0)
	if err != nil || size != len(m)-HeaderLen || handle != 0x80000002 || !IsAnswer(handle) {
		t.Errorf("Header: got %d %#x %v", size, handle, err)
	}
	if _, _, err := Header(m, size-1); !errors.Is(err, ErrSize) {
		t.Errorf("Header under a smaller limit: got %v, want ErrSize", err)
	}
	if v, err := DecodeResponse(m[HeaderLen:]); err != nil || v.(map[string]any)["CurrentMaxPlayers"] != 32 {
		t.Errorf("the message's XML: got %v, %v", v, err)
	}
	again, err := AppendMessage(nil, handle, m[HeaderLen:])
	if err != nil || !bytes.Equal(again, m) {
		t.Errorf("AppendMessage: got %x, %v", again, err)
	}
	for name, v := range vs {
		if v.Kind != "badframe" {
			continue
		}
		var de *wire.DecodeError
		if _, _, err := Header(v.Bytes, 0); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
	if IsAnswer(7) {
		t.Error("IsAnswer(7): a callback's handle taken for an answer")
	}
}

func TestDecodeResponse(t *testing.T) {
	vs := testutil.Vectors(t)
	v, err := DecodeResponse(vs["response-options"].Bytes)
	want := map[string]any{"Name": "$o$f00Gâte & TM", "Password": "No password", "CurrentMaxPlayers": 32, "IsP2PUpload": false, "Ratio": 0.5}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Errorf("options: got %#v, %v", v, err)
	}
	v, err = DecodeResponse(vs["response-players"].Bytes)
	wantPlayers := []any{map[string]any{"Login": "zoe", "NickName": "$f00Zoë", "PlayerId": -7}, map[string]any{"Login": "bob", "Name": ""}}
	if err != nil || !reflect.DeepEqual(v, wantPlayers) {
		t.Errorf("players: got %#v, %v", v, err)
	}
	if v, err := DecodeResponse(vs["response-untyped"].Bytes); err != nil || v != " plain text " {
		t.Errorf("untyped: got %q, %v", v, err)
	}
	var f *Fault
	if _, err := DecodeResponse(vs["fault-denied"].Bytes); !errors.As(err, &f) || f.Code != -1000 || f.Message != "Permission denied." {
		t.Errorf("fault: got %v", err)
	}
	for name, v := range vs {
		if v.Kind != "bad" {
			continue
		}
		var de *wire.DecodeError
		if _, err := DecodeResponse(v.Bytes); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *wire.DecodeError", name, err)
		}
	}
}

func TestCall(t *testing.T) {
	got, err := AppendCall(nil, "GetPlayerList", 10000, 0)
	if want := testutil.Vectors(t)["call-players"].Bytes; err != nil || !bytes.Equal(got, want) {
		t.Errorf("AppendCall: got %s (%v), want %s", got, err, want)
	}
	got, _ = AppendCall(nil, "Authenticate", "User", "a<b&c")
	if !strings.Contains(string(got), "<string>a&lt;b&amp;c</string>") {
		t.Errorf("AppendCall does not escape: %s", got)
	}
}

func TestDecodeBounds(t *testing.T) {
	deep := strings.Repeat("<value><array><data>", MaxDepth+2) + strings.Repeat("</data></array></value>", MaxDepth+2)
	x := `<methodResponse><params><param>` + deep + `</param></params></methodResponse>`
	if _, err := DecodeResponse([]byte(x)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d levels: got %v, want ErrTooLong", MaxDepth+2, err)
	}
	many := `<methodResponse><params><param><value><array><data>` + strings.Repeat("<value/>", MaxValues+1) + `</data></array></value></param></params></methodResponse>`
	if _, err := DecodeResponse([]byte(many)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d values: got %v, want ErrTooLong", MaxValues+1, err)
	}
}

// Every prefix of an answer is refused with a *wire.DecodeError.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "response" && v.Kind != "fault" {
			continue
		}
		for n := range len(v.Bytes) {
			var de *wire.DecodeError
			if _, err := DecodeResponse(v.Bytes[:n]); !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
		}
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	in := testutil.Vectors(b)["response-players"].Bytes
	testutil.BenchDecode(b, in, func(x []byte) error { _, err := DecodeResponse(x); return err })
}

func FuzzDecodeResponse(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeResponse(b)
		var fault *Fault
		if errors.As(err, &fault) {
			return
		}
		if !testutil.Decodes(t, b, func([]byte) error { return err }) {
			return
		}
		out, err := AppendResponse(nil, v)
		if err != nil {
			t.Fatalf("decoded value %#v does not encode: %v", v, err)
		}
		v2, err := DecodeResponse(out)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v (%v)", v, v2, err)
		}
	})
}
