package teeworlds

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestRequests(t *testing.T) {
	v := testutil.Vectors(t)
	tr := TokenRequest{Token: 0x12345678}
	if got, _ := tr.AppendTo(nil); string(got) != string(v["token-request"].Bytes) || len(got) != tr.Len() {
		t.Errorf("token request: got %x (%d bytes, Len %d)", got, len(got), tr.Len())
	}
	ir := InfoRequest{To: 0xaf5d74d9, Token: 0x12345678, BrowseToken: 42}
	if got, _ := ir.AppendTo(nil); string(got) != string(v["info-request"].Bytes) || len(got) != ir.Len() {
		t.Errorf("info request: got %x, want %x", got, v["info-request"].Bytes)
	}
}

func TestDecodeTeeworlds075(t *testing.T) {
	v := testutil.Vectors(t)
	b := v["token-response-teeworlds-0.7.5"].Bytes
	var tr TokenResponse
	if err := tr.Decode(b); err != nil || tr.To != 0x12345678 || tr.Token != 0xaf5d74d9 {
		t.Errorf("token response: got %+v, %v", tr, err)
	}
	if to, ok := PeekTokenResponse(b); !ok || to != 0x12345678 {
		t.Errorf("PeekTokenResponse: got %x, %v", to, ok)
	}
	b = v["info-teeworlds-0.7.5"].Bytes
	var m Info
	if err := m.Decode(b); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("to %x from %x browse %d %q %q %q %q %q flags %d skill %d players %d/%d clients %d/%d list %d",
		m.To, m.From, m.BrowseToken, m.Version, m.Name, m.Hostname, m.Map, m.GameType, m.Flags, m.SkillLevel,
		m.NumPlayers, m.MaxPlayers, m.NumClients, m.MaxClients, len(m.Clients))
	if want := `to 12345678 from af5d74d9 browse 42 "0.7.5" "Gate Tee" "" "dm1" "DM" flags 0 skill 1 players 0/6 clients 0/12 list 0`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if to, browse, ok := PeekInfo(b); !ok || to != 0x12345678 || browse != 42 {
		t.Errorf("PeekInfo: got %x, %d, %v", to, browse, ok)
	}
}

func TestDecodeClients(t *testing.T) {
	var m Info
	if err := m.Decode(testutil.Vectors(t)["info-built"].Bytes); err != nil {
		t.Fatal(err)
	}
	want := `[{Name:nameless tee Clan:Gate Country:276 Score:17 Flags:0} {Name:brainless tee Clan: Country:-1 Score:-3 Flags:0} {Name:watcher Clan:x Country:840 Score:0 Flags:1} {Name:bot Clan: Country:-1 Score:100 Flags:2}]`
	var got []string
	for _, c := range m.Clients {
		got = append(got, fmt.Sprintf("{Name:%s Clan:%s Country:%d Score:%d Flags:%d}", c.Name, c.Clan, c.Country, c.Score, c.Flags))
	}
	if fmt.Sprint(got) != want || m.BrowseToken != 1000 || m.Flags != InfoFlagPassword|InfoFlagTimeScore || string(m.Map) != "ctf5" {
		t.Errorf("got %v, %+v", got, m)
	}
}

func TestInts(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, 64, -64, -65, 1000, 8191, 8192, math.MaxInt32, math.MinInt32} {
		b := AppendInt(nil, v)
		r := wire.NewReader(b)
		if got := readInt(&r, "v"); got != v || r.Err() != nil || r.Len() != 0 || len(b) != IntLen(v) || len(b) > MaxIntLen {
			t.Errorf("%d: encoded %x, read %d (%v)", v, b, got, r.Err())
		}
	}
	// The engine's examples: 0x0f is 15, 0x40 is -1, 0xa8 0x0f is 1000.
	for b, want := range map[string]int32{"\x0f": 15, "\x40": -1, "\xa8\x0f": 1000} {
		r := wire.NewReader([]byte(b))
		if got := readInt(&r, "v"); got != want {
			t.Errorf("%x: got %d, want %d", b, got, want)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad-token" && v.Kind != "bad-info" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var err error
			if v.Kind == "bad-token" {
				err = new(TokenResponse).Decode(v.Bytes)
			} else {
				err = new(Info).Decode(v.Bytes)
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *wire.DecodeError", err)
			}
		})
	}
}

func TestDecodeBounds(t *testing.T) {
	m := Info{Version: []byte("0.7.5")}
	for range MaxClients + 1 {
		m.Clients = append(m.Clients, Client{})
	}
	if _, err := m.AppendTo(nil); !errors.Is(err, wire.ErrRange) {
		t.Errorf("%d clients encoded: %v", len(m.Clients), err)
	}
	// Decode refuses more than MaxClients even in a packet that fits.
	m.Clients = m.Clients[:MaxClients]
	b, err := m.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, 0, 0, 0, 0, 0)
	if err := new(Info).Decode(b); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d clients: got %v, want ErrTooLong", MaxClients+1, err)
	}
	if err := new(Info).Decode(make([]byte, MaxPacketSize+1)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("oversized packet: got %v, want ErrTooLong", err)
	}
}

// Every prefix of a valid answer is refused with a *wire.DecodeError,
// but one that ends right after a whole client (the list runs to the
// packet's end).
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		switch v.Kind {
		case "token-response":
			for n := range len(v.Bytes) {
				if err := new(TokenResponse).Decode(v.Bytes[:n]); !errors.Is(err, wire.ErrTruncated) {
					t.Fatalf("%s[:%d]: got %v, want ErrTruncated", name, n, err)
				}
			}
		case "info":
			var whole Info
			if err := whole.Decode(v.Bytes); err != nil {
				t.Fatal(err)
			}
			for n := range len(v.Bytes) {
				var m Info
				err := m.Decode(v.Bytes[:n])
				var de *wire.DecodeError
				switch {
				case err == nil && len(m.Clients) >= len(whole.Clients):
					t.Fatalf("%s[:%d]: decoded with all %d clients", name, n, len(m.Clients))
				case err != nil && !errors.As(err, &de):
					t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
				}
			}
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := testutil.Vectors(t)["info-built"].Bytes
	var m Info
	_ = m.Decode(b) // grow the reused client list once
	if n := testing.AllocsPerRun(100, func() { _ = m.Decode(b) }); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

func BenchmarkDecodeInfo(b *testing.B) {
	testutil.BenchDecode(b, testutil.Vectors(b)["info-built"].Bytes, new(Info).Decode)
}

func dumpInfo(m *Info) string {
	d := *m
	if len(d.Clients) == 0 {
		d.Clients = nil
	}
	return fmt.Sprintf("%+v", d)
}

func FuzzDecodeInfo(f *testing.F) {
	vs := testutil.SeedVectors(f)
	other := vs["info-built"].Bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		// Integers may be sent longer than needed: compare decodes, not bytes.
		var m Info
		if !testutil.Decodes(t, b, m.Decode) {
			return
		}
		if len(m.Clients) > MaxClients {
			t.Fatalf("%d clients", len(m.Clients))
		}
		out, err := m.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded info does not encode: %v", err)
		}
		var back, reused Info
		if err := back.Decode(out); err != nil || dumpInfo(&back) != dumpInfo(&m) {
			t.Fatalf("decode → encode → decode: %v\n%s\n%s", err, dumpInfo(&back), dumpInfo(&m))
		}
		if to, browse, ok := PeekInfo(b); !ok || to != m.To || browse != m.BrowseToken {
			t.Fatalf("PeekInfo: %x %d %v; decoded %x %d", to, browse, ok, m.To, m.BrowseToken)
		}
		_ = reused.Decode(other)
		if err := reused.Decode(b); err != nil || dumpInfo(&reused) != dumpInfo(&m) {
			t.Fatalf("decoding into a reused info: %v", err)
		}
	})
}

func FuzzDecodeTokenResponse(f *testing.F) {
	vs := testutil.SeedVectors(f)
	other := vs["token-response-teeworlds-0.7.5"].Bytes
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := testutil.RoundTrip(t, b, new(TokenResponse), other, func(m *TokenResponse) string { return fmt.Sprintf("%+v", *m) })
		if to, ok := PeekTokenResponse(b); err == nil && !ok {
			t.Fatalf("PeekTokenResponse refuses what decodes (%x)", to)
		}
	})
}

func TestDecodeConnectingClient(t *testing.T) {
	var m Info
	if err := m.Decode(testutil.Vectors(t)["info-teeworlds-0.7.5-connecting"].Bytes); err != nil {
		t.Fatal(err)
	}
	if len(m.Clients) != 1 || string(m.Clients[0].Name) != "(connecting)" || m.Clients[0].Country != -1 ||
		m.Clients[0].Flags != ClientFlagSpectator || m.NumClients != 1 || m.NumPlayers != 0 || m.BrowseToken != 5 {
		t.Errorf("got %+v", m)
	}
}
