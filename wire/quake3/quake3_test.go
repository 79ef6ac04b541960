package quake3

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire"
)

func TestAppendRequest(t *testing.T) {
	v := testutil.Vectors(t)["getstatus-request"]
	got, err := AppendRequest(nil, "getstatus", []byte("abc123"))
	if err != nil || !bytes.Equal(got, v.Bytes) {
		t.Fatalf("got %q, %v; want %q", got, err, v.Bytes)
	}
	for _, c := range []string{"a b", `a\b`, "a;b", `a"b`, string(bytes.Repeat([]byte{'x'}, MaxChallenge+1))} {
		if _, err := AppendRequest(nil, "getinfo", []byte(c)); err == nil {
			t.Errorf("challenge %q: got no error", c)
		}
	}
	if _, err := AppendRequest(nil, "rcon", nil); err == nil {
		t.Error("command rcon: got no error")
	}
	if got, _ := AppendRequest(nil, "getinfo", nil); string(got) != "\xff\xff\xff\xffgetinfo" {
		t.Errorf("no challenge: got %q", got)
	}
}

func TestDecodeOpenArena(t *testing.T) {
	var r Response
	if err := r.Decode(testutil.Vectors(t)["status-openarena"].Bytes); err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindStatus || len(r.Vars) != 44 || len(r.Players) != 1 {
		t.Fatalf("got kind %v, %d vars, %d players; want statusResponse, 44, 1", r.Kind, len(r.Vars), len(r.Players))
	}
	checks := map[string]string{"challenge": "abc123", "sv_hostname": "^1Red ^7Arena", "SV_MAXCLIENTS": "8",
		"mapname": "oa_dm1", "g_needpass": "0", "g_timestamp": "2026-11-23 08:50:38", "g_voteGametypes": "/0/1/3/4/5/6/7/8/9/10/11/12/"}
	for k, want := range checks {
		if got, ok := r.Get(k); !ok || string(got) != want {
			t.Errorf("%s: got %q (%v), want %q", k, got, ok, want)
		}
	}
	if p := r.Players[0]; p.Score != 0 || p.Ping != 0 || string(p.Name) != "Dark" || p.HasTeam {
		t.Errorf("player: got %+v", p)
	}
	if _, ok := r.Get("hostname"); ok {
		t.Error("hostname: present, want absent")
	}

	if err := r.Decode(testutil.Vectors(t)["info-openarena"].Bytes); err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindInfo || len(r.Vars) != 12 || len(r.Players) != 0 {
		t.Fatalf("info: got kind %v, %d vars, %d players", r.Kind, len(r.Vars), len(r.Players))
	}
	if got, _ := r.Get("challenge"); string(got) != "xyz" {
		t.Errorf("info challenge: got %q, want xyz", got)
	}
}

func TestDecodeDarkPlaces(t *testing.T) {
	var r Response
	if err := r.Decode(testutil.Vectors(t)["status-darkplaces"].Bytes); err != nil {
		t.Fatal(err)
	}
	want := []Player{
		{Score: 10, Ping: 50, Team: 1, HasTeam: true, Name: []byte("^1Alice")},
		{Score: -2, Ping: 0, Team: 2, HasTeam: true, Name: []byte("[BOT]^3Bob")},
		{Score: 0, Ping: 999, Team: -1, HasTeam: true, Name: []byte("Eve")},
	}
	if got := fmt.Sprintf("%+v", r.Players); got != fmt.Sprintf("%+v", want) {
		t.Fatalf("players: got %s, want %s", got, fmt.Sprintf("%+v", want))
	}
	if h, _ := r.Get("hostname"); string(AppendPlainName(nil, h)) != "Green Box" {
		t.Errorf("plain hostname: got %q, want %q", AppendPlainName(nil, h), "Green Box")
	}
}

func TestDecodeBad(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "bad" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var r Response
			err := r.Decode(v.Bytes)
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *wire.DecodeError", err)
			}
		})
	}
}

func TestDecodeBounds(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("\xff\xff\xff\xffstatusResponse\n")
	for i := 0; i <= MaxVars; i++ {
		fmt.Fprintf(&b, "\\k%d\\v", i)
	}
	var r Response
	if err := r.Decode(b.Bytes()); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d vars: got %v, want ErrTooLong", MaxVars+1, err)
	}
	b.Reset()
	b.WriteString("\xff\xff\xff\xffstatusResponse\n\\a\\b\n")
	for i := 0; i <= MaxPlayers; i++ {
		b.WriteString("1 2 \"p\"\n")
	}
	if err := r.Decode(b.Bytes()); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("%d players: got %v, want ErrTooLong", MaxPlayers+1, err)
	}
	if err := r.Decode(make([]byte, MaxDatagram+1)); !errors.Is(err, wire.ErrTooLong) {
		t.Errorf("oversized datagram: got %v, want ErrTooLong", err)
	}
}

// Every prefix of a valid answer is rejected with a *wire.DecodeError or
// decodes, never panics. The text protocol has no length fields, so a
// prefix ending at a pair or line boundary is a valid shorter answer; a
// prefix that cuts a player line before its closing quote is rejected.
func TestDecodeTruncated(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "status" && v.Kind != "info" {
			continue
		}
		for n := 0; n < len(v.Bytes); n++ {
			prefix := v.Bytes[:n]
			var r Response
			err := r.Decode(prefix)
			var de *wire.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: got %v, want a *wire.DecodeError", name, n, err)
			}
			if n < 4+len("infoResponse") && err == nil {
				t.Fatalf("%s: prefix of %d bytes decoded", name, n)
			}
			lines := bytes.Split(prefix, []byte{'\n'})
			if last := lines[len(lines)-1]; len(lines) > 2 && len(last) > 0 && bytes.Count(last, []byte{'"'}) < 2 && err == nil {
				t.Fatalf("%s[:%d]: a cut player line %q decoded", name, n, last)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for name, v := range testutil.Vectors(t) {
		if v.Kind != "status" && v.Kind != "info" {
			continue
		}
		var r, r2 Response
		if err := r.Decode(v.Bytes); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := r.AppendTo(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := r2.Decode(out); err != nil {
			t.Fatalf("%s: re-decode: %v", name, err)
		}
		if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", r2) {
			t.Errorf("%s: round trip changed the answer:\n%+v\n%+v", name, r, r2)
		}
	}
}

func TestAppendPlainName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"^1Red ^7Arena", "Red Arena"},
		{"^x0F0Green", "Green"},
		{"^xZZ9x", "ZZ9x"}, // not hex: "^x" is an ordinary colour code
		{"a^^b", "a^"},     // as ioquake3: the second caret starts a code
		{"a^^1b", "a^b"},
		{"trail^", "trail^"},
		{"tab\there\x7f", "tabhere"},
		{"[BOT]^3Bob", "[BOT]Bob"},
	} {
		if got := string(AppendPlainName(nil, []byte(c.in))); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	v := testutil.Vectors(t)
	var r Response
	buf := make([]byte, 0, 64)
	for _, name := range []string{"status-openarena", "status-darkplaces", "info-openarena"} {
		b := v[name].Bytes
		_ = r.Decode(b) // grow the reusable slices once
		allocs := testing.AllocsPerRun(100, func() {
			if err := r.Decode(b); err != nil {
				t.Fatal(err)
			}
			for i := range r.Players {
				buf = AppendPlainName(buf[:0], r.Players[i].Name)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, allocs)
		}
	}
}

func FuzzDecode(f *testing.F) {
	testutil.SeedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r, r2 Response
		if !testutil.Decodes(t, b, r.Decode) {
			return
		}
		if len(r.Vars) > MaxVars || len(r.Players) > MaxPlayers {
			t.Fatalf("%d vars, %d players: past the bounds", len(r.Vars), len(r.Players))
		}
		for i := range r.Players {
			if n := AppendPlainName(nil, r.Players[i].Name); len(n) > len(r.Players[i].Name) {
				t.Fatalf("plain name %q longer than %q", n, r.Players[i].Name)
			}
		}
		out, err := r.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded answer does not encode: %v", err)
		}
		if err := r2.Decode(out); err != nil {
			t.Fatalf("re-decode of %q: %v", out, err)
		}
		if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", r2) {
			t.Fatalf("round trip changed the answer:\n%+v\n%+v", r, r2)
		}
	})
}
