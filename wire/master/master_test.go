package master

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestPeek(t *testing.T) {
	for _, v := range testutil.ReadVectors(t, testutil.VectorFile) {
		want := map[string]Kind{"heartbeat": KindHeartbeat, "getinfo": KindGetInfo, "info": KindInfoResponse}[v.Kind]
		if want == KindNone {
			continue
		}
		if got := Peek(v.Bytes); got != want {
			t.Errorf("%s: got %v, want %v", v.Name, got, want)
		}
	}
	for _, tc := range []struct {
		in   string
		want Kind
	}{
		{Header + "getservers 71", KindGetServers},
		{Header + "getserversExt Q 68", KindGetServersExt},
		{Header + "getserversResponse", KindGetServersResponse},
		{Header + "getserversExtResponse\\", KindGetServersExtResponse},
		{Header + "getserversX", KindNone},
		{Header + "heartbeats", KindNone},
		{Header + "getstatus x", KindNone},
		{"\xff\xff\xff\xfeheartbeat X", KindNone},
		{Header, KindNone},
		{"", KindNone},
	} {
		if got := Peek([]byte(tc.in)); got != tc.want {
			t.Errorf("Peek(%q): got %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	vs := testutil.Vectors(t)
	for name, want := range map[string]string{"heartbeat-openarena": "QuakeArena-1", "heartbeat-darkplaces": "DarkPlaces"} {
		got, err := DecodeHeartbeat(vs[name].Bytes)
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v, want %q", name, got, err, want)
		}
		if out := AppendHeartbeat(nil, want); !bytes.Equal(out, vs[name].Bytes) {
			t.Errorf("%s: AppendHeartbeat: got %q, want %q", name, out, vs[name].Bytes)
		}
	}
	for _, bad := range []string{Header + "heartbeat", Header + "heartbeat \n", Header + "heartbeat a b", Header + "heartbeat\tX"} {
		if _, err := DecodeHeartbeat([]byte(bad)); err == nil {
			t.Errorf("DecodeHeartbeat(%q) accepted", bad)
		}
	}
}

func TestGetInfo(t *testing.T) {
	vs := testutil.Vectors(t)
	c, err := DecodeGetInfo(vs["getinfo-dpmaster"].Bytes)
	if err != nil || string(c) != "A_ch4Lleng3" {
		t.Fatalf("got %q, %v", c, err)
	}
	out, err := AppendGetInfo(nil, c)
	if err != nil || !bytes.Equal(out, vs["getinfo-dpmaster"].Bytes) || len(out) != GetInfoLen(len(c)) {
		t.Fatalf("AppendGetInfo: got %q, %v", out, err)
	}
	if _, err := DecodeGetInfo(vs["getinfo-bad-challenge"].Bytes); !errors.Is(err, ErrChallenge) {
		t.Errorf("bad challenge: got %v, want ErrChallenge", err)
	}
	for c := 0; c < 256; c++ {
		want := c >= 33 && c <= 126 && !bytes.ContainsRune([]byte(`\/;"%`), rune(c))
		if got := ValidChallengeByte(byte(c)); got != want {
			t.Errorf("ValidChallengeByte(%d): got %v, want %v", c, got, want)
		}
		if _, err := AppendGetInfo(nil, []byte{'a', byte(c)}); (err == nil) != want {
			t.Errorf("AppendGetInfo with byte %d: got %v", c, err)
		}
	}
}

func TestInfoDecode(t *testing.T) {
	vs := testutil.Vectors(t)
	for _, tc := range []struct {
		name string
		want Info
		keys map[string]string
	}{
		{"info-openarena", Info{Challenge: []byte("Abc123XYZ"), GameName: []byte("Quake3Arena"), Protocol: 71, Clients: 1, MaxClients: 8},
			map[string]string{"mapname": "oa_dm1", "hostname": "noname", "g_needpass": "0"}},
		{"info-darkplaces", Info{Challenge: []byte("dp42x"), GameName: []byte("Nexuiz"), Protocol: 3, Clients: 3, MaxClients: 16, GameType: 4},
			map[string]string{"bots": "1", "mapname": "dm3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in Info
			if err := in.Decode(vs[tc.name].Bytes); err != nil {
				t.Fatal(err)
			}
			in.Raw = nil
			if fmt.Sprintf("%+v", in) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("got %+v, want %+v", in, tc.want)
			}
			if err := in.Decode(vs[tc.name].Bytes); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.keys {
				if got, ok := in.Get(k); !ok || string(got) != want {
					t.Errorf("Get(%q): got %q, %v, want %q", k, got, ok, want)
				}
			}
		})
	}
	for name, want := range map[string]error{"info-no-challenge": ErrMissing, "info-zero-max": wire.ErrRange} {
		var in Info
		if err := in.Decode(vs[name].Bytes); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	var in Info
	if err := in.Decode([]byte(Header + "infoResponse\n\\sv_maxclients\\8\\clients\\0\\protocol\\68\\challenge\\abc")); err != nil || string(in.Name()) != DefaultGameName {
		t.Errorf("no gamename: got %q, %v, want %q", in.Name(), err, DefaultGameName)
	}
	if err := in.Decode([]byte(Header + "infoResponse\n\\sv_maxclients\\8\\clients\\0\\protocol\\68\\challenge\\abc\\gamename\\a b")); !errors.Is(err, wire.ErrRange) {
		t.Errorf("gamename with a space: got %v, want ErrRange", err)
	}
}

func TestQueryDecode(t *testing.T) {
	vs := testutil.Vectors(t)
	nt := NoGameType
	for _, tc := range []struct {
		name string
		want Query
	}{
		{"getservers-q3a", Query{Protocol: 67, GameType: 0, Empty: true, Full: true}},
		{"getservers-nexuiz", Query{GameName: []byte("Nexuiz"), Protocol: 3, GameType: nt}},
		{"getservers-qfusion", Query{GameName: []byte("qfusion"), Protocol: 39, Full: true, GameType: nt}},
		{"getserversext-q3a", Query{Ext: true, GameName: []byte("Quake3Arena"), Protocol: 68, IPv4: true, IPv6: true, Empty: true, GameType: nt}},
		{"getservers-qstat-openarena", Query{Protocol: 71, Empty: true, Full: true, GameType: nt}},
		{"getservers-qstat-nexuiz", Query{GameName: []byte("Nexuiz"), Protocol: 3, Empty: true, Full: true, GameType: nt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q Query
			if err := q.Decode(vs[tc.name].Bytes); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", q) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("got %+v, want %+v", q, tc.want)
			}
			var q2 Query
			if err := q2.Decode(q.AppendTo(nil)); err != nil || fmt.Sprintf("%+v", q) != fmt.Sprintf("%+v", q2) {
				t.Fatalf("round trip: got %+v (%v), want %+v", q2, err, q)
			}
		})
	}
	for _, tc := range []struct {
		in         string
		gametype   int
		want4, ip6 bool
	}{
		{"getservers 68 gametype=3", 3, true, false},
		{"getservers 68 tourney team", 3, true, false},
		{"getservers 68 gametype=x", NoGameType, true, false},
		{"getservers 68 unknownfilter", NoGameType, true, false},
		{"getserversExt Q 68", NoGameType, true, true},
		{"getserversExt Q 68 ipv6", NoGameType, false, true},
		{"getserversExt Q 68 ipv4", NoGameType, true, false},
	} {
		var q Query
		if err := q.Decode([]byte(Header + tc.in)); err != nil || q.GameType != tc.gametype || q.WantsIPv4() != tc.want4 || q.WantsIPv6() != tc.ip6 {
			t.Errorf("%q: got %+v (%v)", tc.in, q, err)
		}
	}
	for _, bad := range []string{"getservers", "getservers Nexuiz", "getservers Nexuiz x", "getserversExt 68", "getserversExt Q"} {
		var q Query
		if err := q.Decode([]byte(Header + bad)); err == nil {
			t.Errorf("%q accepted: %+v", bad, q)
		}
	}
}

func TestResponse(t *testing.T) {
	vs := testutil.Vectors(t)
	want4 := netip.MustParseAddrPort("1.2.3.4:2048")
	want6 := netip.MustParseAddrPort("[2001:db8::1]:27960")
	for _, tc := range []struct {
		name     string
		ext, eot bool
		want     []netip.AddrPort
	}{
		{"response-one", false, true, []netip.AddrPort{want4}},
		{"response-ext", true, true, []netip.AddrPort{want4, want6}},
		{"response-middle", false, false, []netip.AddrPort{want4, netip.MustParseAddrPort("5.6.7.8:27960")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ext, eot, err := DecodeResponse(vs[tc.name].Bytes, nil)
			if err != nil || ext != tc.ext || eot != tc.eot || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v ext=%v eot=%v (%v), want %v ext=%v eot=%v", got, ext, eot, err, tc.want, tc.ext, tc.eot)
			}
			out := AppendResponseHeader(nil, tc.ext)
			for _, a := range got {
				out = AppendEntry(out, a)
			}
			if tc.eot {
				out = AppendEOT(out)
			}
			if !bytes.Equal(out, vs[tc.name].Bytes) {
				t.Fatalf("re-encoded: got %q, want %q", out, vs[tc.name].Bytes)
			}
		})
	}
	// id's own master ended its lists with a bare \EOT.
	if got, _, eot, err := DecodeResponse([]byte(Header+"getserversResponse\\\x01\x02\x03\x04\x08\x00\\EOT"), nil); err != nil || !eot || len(got) != 1 {
		t.Errorf("short EOT: got %v eot=%v (%v)", got, eot, err)
	}
	// An IPv6 entry belongs to the Ext response only.
	if _, _, _, err := DecodeResponse([]byte(Header+"getserversResponse/"+string(make([]byte, 18))), nil); err == nil {
		t.Error("IPv6 entry accepted in a getserversResponse")
	}
}

// TestTruncation checks that every proper prefix of a valid message is
// refused cleanly, or (a list datagram cut between entries, a heartbeat
// without its newline) read as the shorter message it is.
func TestTruncation(t *testing.T) {
	for _, v := range testutil.ReadVectors(t, testutil.VectorFile) {
		for n := range len(v.Bytes) {
			b := v.Bytes[:n]
			switch v.Kind {
			case "heartbeat":
				if p, err := DecodeHeartbeat(b); err == nil && !bytes.HasPrefix(v.Bytes[len(Header)+len("heartbeat "):], p) {
					t.Fatalf("%s[:%d]: protocol %q is not a prefix", v.Name, n, p)
				}
				testutil.Decodes(t, b, func(b []byte) error { _, err := DecodeHeartbeat(b); return err })
			case "getinfo":
				testutil.Decodes(t, b, func(b []byte) error { _, err := DecodeGetInfo(b); return err })
			case "info":
				var in Info
				// Cut inside the challenge's value, the info string is
				// still whole and valid, with a shorter challenge.
				if err := in.Decode(b); err == nil && !bytes.HasPrefix(v.Bytes[bytes.Index(v.Bytes, []byte("challenge\\"))+10:], in.Challenge) {
					t.Fatalf("%s[:%d] accepted with challenge %q", v.Name, n, in.Challenge)
				}
				testutil.Decodes(t, b, in.Decode)
			case "query":
				var q Query
				testutil.Decodes(t, b, q.Decode)
			case "response":
				got, _, eot, err := DecodeResponse(b, nil)
				// Cut after "\EOT" it is the short end of id's master.
				if err == nil && eot && !bytes.HasSuffix(b, []byte("\\EOT")) {
					t.Fatalf("%s[:%d]: a cut list reads as ended", v.Name, n)
				}
				if err == nil && len(got) > 2 {
					t.Fatalf("%s[:%d]: %d entries", v.Name, n, len(got))
				}
				testutil.Decodes(t, b, func(b []byte) error { _, _, _, err := DecodeResponse(b, nil); return err })
			}
		}
	}
}

func TestAllocs(t *testing.T) {
	vs := testutil.Vectors(t)
	buf := make([]byte, 0, MaxResponseDatagram)
	addrs := []netip.AddrPort{netip.MustParseAddrPort("1.2.3.4:2048"), netip.MustParseAddrPort("[2001:db8::1]:28000")}
	var in Info
	var q Query
	allocs := testing.AllocsPerRun(100, func() {
		_ = Peek(vs["info-openarena"].Bytes)
		_, _ = DecodeHeartbeat(vs["heartbeat-openarena"].Bytes)
		_ = in.Decode(vs["info-openarena"].Bytes)
		_, _ = in.Get("mapname")
		_ = q.Decode(vs["getserversext-q3a"].Bytes)
		b, _ := AppendGetInfo(buf[:0], []byte("challenge12"))
		b = AppendResponseHeader(b[:0], true)
		for _, a := range addrs {
			b = AppendEntry(b, a)
		}
		_ = AppendEOT(b)
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations, want 0", allocs)
	}
}

func FuzzHeartbeat(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p []byte
		if !testutil.Decodes(t, b, func(b []byte) error { var err error; p, err = DecodeHeartbeat(b); return err }) {
			return
		}
		p2, err := DecodeHeartbeat(AppendHeartbeat(nil, string(p)))
		if err != nil || !bytes.Equal(p, p2) {
			t.Fatalf("round trip of %q: %q, %v", p, p2, err)
		}
	})
}

func FuzzGetInfo(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var c []byte
		if !testutil.Decodes(t, b, func(b []byte) error { var err error; c, err = DecodeGetInfo(b); return err }) {
			return
		}
		out, err := AppendGetInfo(nil, c)
		if err != nil {
			t.Fatalf("decoded challenge %q does not encode: %v", c, err)
		}
		if c2, err := DecodeGetInfo(out); err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("round trip of %q: %q, %v", c, c2, err)
		}
	})
}

func FuzzInfo(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var in, in2 Info
		if !testutil.Decodes(t, b, in.Decode) {
			return
		}
		if in.MaxClients < 1 || len(in.GameName) > MaxGameName || len(in.Raw) > MaxInfo {
			t.Fatalf("accepted out of bounds: %+v", in)
		}
		if err := in2.Decode(AppendInfoResponse(nil, in.Raw)); err != nil || fmt.Sprintf("%+v", in) != fmt.Sprintf("%+v", in2) {
			t.Fatalf("round trip: %+v, %v; want %+v", in2, err, in)
		}
	})
}

func FuzzQuery(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var q, q2 Query
		if !testutil.Decodes(t, b, q.Decode) {
			return
		}
		if len(q.GameName) > MaxGameName || q.GameType < NoGameType {
			t.Fatalf("accepted out of bounds: %+v", q)
		}
		if err := q2.Decode(q.AppendTo(nil)); err != nil {
			t.Fatalf("re-decode of %q: %v", q.AppendTo(nil), err)
		}
		if len(q.GameName) == 0 && !q.Ext {
			q2.GameName = nil // the default name, written out or not, is one query
		}
		if string(q.Name()) != string(q2.Name()) {
			t.Fatalf("round trip: %+v; want %+v", q2, q)
		}
		q2.GameName = q.GameName
		if fmt.Sprintf("%+v", q) != fmt.Sprintf("%+v", q2) {
			t.Fatalf("round trip: %+v; want %+v", q2, q)
		}
	})
}

func FuzzResponse(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []netip.AddrPort
		var ext, eot bool
		if !testutil.Decodes(t, b, func(b []byte) error {
			var err error
			got, ext, eot, err = DecodeResponse(b, nil)
			return err
		}) {
			return
		}
		out := AppendResponseHeader(nil, ext)
		for _, a := range got {
			out = AppendEntry(out, a)
		}
		if eot {
			out = AppendEOT(out)
		}
		got2, ext2, eot2, err := DecodeResponse(out, nil)
		if err != nil || ext != ext2 || eot != eot2 || fmt.Sprint(got) != fmt.Sprint(got2) {
			t.Fatalf("round trip: %v %v %v (%v); want %v %v %v", got2, ext2, eot2, err, got, ext, eot)
		}
	})
}
