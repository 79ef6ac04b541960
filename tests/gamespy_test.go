package tests

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// gamespyAgainstGamedig asks the fixture at addr through a real Caddy's
// game_query (protocol, with options) and with GameDig's own client as
// the game gameID, and checks that both read the same, field by field,
// and that what they read is the fixture's: its names in Windows-1252
// read back, its players and teams.
func gamespyAgainstGamedig(t *testing.T, protocol, options, gameID string, addr netip.AddrPort, f testutil.GameSpyFixture) *query.Status {
	t.Helper()
	gate := startQueryGate(t, fmt.Sprintf(`
			server gs %s %s%s
			query_timeout 10s`, addr, protocol, options))
	var st query.Status
	r := getJSON(t, gate+"/query/gs", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/gs: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	out := testutil.RunNode(t, 30*time.Second, "node_modules/gamedig/bin/gamedig.js",
		"--type", gameID, "--givenPortOnly", addr.String())
	t.Logf("gamedig --type %s: %s", gameID, out)
	if gameID == "minecraft" {
		// GameDig asks a Minecraft server three ways at once and keeps
		// its GameSpy 4 result whole under raw.gamespy.
		var mc struct {
			Raw struct{ Gamespy json.RawMessage }
		}
		if err := json.Unmarshal(out, &mc); err != nil || mc.Raw.Gamespy == nil {
			t.Fatalf("gamedig --type minecraft has no raw.gamespy (%v)", err)
		}
		out = mc.Raw.Gamespy
	}
	compareGamedig(t, protocol+" fixture: gamegate against gamedig "+testutil.NpmVersion(t, "gamedig")+" --type "+gameID,
		[]byte(r.body), out, nil)
	var gd struct{ Raw map[string]any }
	if err := json.Unmarshal(out, &gd); err != nil {
		t.Fatal(err)
	}
	ours, _ := json.Marshal(st.Raw)
	theirs, _ := json.Marshal(gd.Raw)
	if string(ours) != string(theirs) {
		t.Errorf("raw: gamegate %s, gamedig %s", ours, theirs)
	}
	if st.Name != f.Hostname || st.Map != f.Map || st.MaxPlayers != f.MaxPlayers || len(st.Players) != len(f.Players) ||
		st.Version != f.Version || st.Connect != fmt.Sprintf("127.0.0.1:%d", f.HostPort) {
		t.Errorf("gamegate read %+v, the fixture is %+v", st, f)
	}
	for i, p := range f.Players {
		if i < len(st.Players) && st.Players[i].Name != p.Name {
			t.Errorf("player %d: got %q, want %q", i, st.Players[i].Name, p.Name)
		}
	}
	return &st
}

// A GameSpy 1 answer in three parts sent out of order, with teams and
// Windows-1252 names, as gamegate and GameDig read it.
func TestGameSpy1AgainstGamedig(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	addr := testutil.ServeGameSpy1(t, f)
	st := gamespyAgainstGamedig(t, "gamespy1", "", "unrealtournament", addr, f)
	if st.Players[1].Raw["team"] != "Blue" || st.Players[0].Raw["frags"] != 12.0 {
		t.Errorf("players' raw: %+v", st.Players)
	}
	qstatAgrees(t, "-gps", addr, st)
}

// A GameSpy 3 status behind its challenge, in two parts sent out of
// order, with player and team columns and Windows-1252 names, as gamegate
// and GameDig read it; and without a challenge (Battlefield 2's way), as
// qstat -gs3 reads it too.
func TestGameSpy3AgainstGamedig(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	// GameSpy 4's way (Minecraft's): the status only with the challenge,
	// which qstat -gs4 reads too (it refuses a challenge answer under 12
	// bytes, so the challenge has the seven digits real servers' have).
	addr := testutil.ServeGameSpy3(t, f, 9513307)
	st := gamespyAgainstGamedig(t, "gamespy3", "", "battlefield2", addr, f)
	qstatAgrees(t, "-gs4", addr, st)
	if st.Players[2].Raw["score"] != -2.0 || st.Players[1].Raw["team"] != 1.0 {
		t.Errorf("players' raw: %+v", st.Players)
	}
	bf2 := testutil.ServeGameSpy3(t, f, 0)
	qstatAgrees(t, "-gs3", bf2, gamespyAgainstGamedig(t, "gamespy3", "", "battlefield2", bf2, f))
}

// Minecraft's enable-query (GameSpy 4): a large challenge and UTF-8 text,
// as gamegate's gamespy3 with encoding utf-8 and GameDig's minecraft type
// read it.
func TestGameSpy4MinecraftAgainstGamedig(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	f.UTF8 = true
	f.Players[0].Name = "Renée ✓" // past Windows-1252
	addr := testutil.ServeGameSpy3(t, f, 2_000_000_123)
	st := gamespyAgainstGamedig(t, "gamespy3", " {\n\t\t\t\tencoding utf-8\n\t\t\t}", "minecraft", addr, f)
	qstatAgrees(t, "-gs4", addr, st)
}

// An answer in more datagrams than max_packets is refused as unusable
// (502), not gathered.
func TestGameSpyAnswerBudgets(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	gs1, gs3 := testutil.ServeGameSpy1(t, f), testutil.ServeGameSpy3(t, f, 12345)
	gate := startQueryGate(t, fmt.Sprintf(`
			server gs1 %s gamespy1 {
				max_packets 2
			}
			server gs1ok %s gamespy1 {
				max_packets 3
			}
			server gs3 %s gamespy3 {
				max_packets 1
			}
			query_timeout 10s`, gs1, gs1, gs3))
	for _, c := range []struct {
		server string
		want   int
	}{{"gs1", 502}, {"gs1ok", 200}, {"gs3", 502}} {
		if r := request(t, "GET", gate+"/query/"+c.server); r.status != c.want || c.want == 502 && !strings.Contains(r.body, "bad_answer") {
			t.Errorf("%s: got %d %s, want %d", c.server, r.status, r.body, c.want)
		}
	}
}

// GameSpy 2's keys, players and teams, each asked on its own, with
// Windows-1252 names, as gamegate and GameDig read them.
func TestGameSpy2AgainstGamedig(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	addr := testutil.ServeGameSpy2(t, f)
	st := gamespyAgainstGamedig(t, "gamespy2", "", "halo", addr, f)
	if st.Players[2].Raw["score"] != -2.0 || st.Players[1].Raw["team"] != 1.0 {
		t.Errorf("players' raw: %+v", st.Players)
	}
	teams, _ := st.Raw["teams"].([]any)
	if len(teams) != 2 {
		t.Errorf("raw.teams: %v", st.Raw["teams"])
	}
	qstatAgrees(t, "-gs2", addr, st)

	// America's Army (gamename armygame) colours its names with Unreal
	// 2's ESC codes, which GameDig removes.
	army := f
	army.GameName = "armygame"
	army.Hostname, army.Players = "\x1bÿ\x01\x01Army\x1b Arena", slices.Clone(f.Players)
	army.Players[0].Name = "\x1b\x01ÿ\x01Renée"
	f.Hostname = "Armyena" // ESC and the three characters after it go, as GameDig reads it
	gamespyAgainstGamedig(t, "gamespy2", "", "americasarmy", testutil.ServeGameSpy2(t, army), f)
}

// qstatAgrees asks qstat (quakestat with kind, such as -gps or -gs2) about
// addr and checks that it reads the name, map and player counts gamegate
// read (qstat's JSON leaves out the bytes past ASCII), and that each
// player it lists is one of gamegate's: qstat keeps only some of them
// with some types (the players of the parts after the first to come for
// -gps, the first player for -gs2), and it is held to what it reads.
func qstatAgrees(t *testing.T, kind string, addr netip.AddrPort, st *query.Status) {
	t.Helper()
	out, err := exec.Command("quakestat", "-json", "-P", "-R", kind, addr.String()).Output()
	if err != nil {
		t.Fatalf("quakestat: %v", err)
	}
	t.Logf("quakestat %s: %s", kind, out)
	var qs []struct {
		Status, Name, Map      string
		NumPlayers, MaxPlayers int
		Players                []struct{ Player, Name string }
	}
	if err := json.Unmarshal(out, &qs); err != nil || len(qs) != 1 || qs[0].Status != "online" {
		t.Fatalf("quakestat printed %s (%v)", out, err)
	}
	ascii := func(s string) string {
		return strings.Map(func(r rune) rune { return map[bool]rune{true: r, false: -1}[r < 0x80] }, s)
	}
	if qs[0].MaxPlayers != st.MaxPlayers || qs[0].NumPlayers != st.NumPlayers || qs[0].Name != ascii(st.Name) ||
		qs[0].Map != st.Map {
		t.Errorf("quakestat read %+v, gamegate %+v", qs[0], st)
	}
	// qstat prints a name's bytes past ASCII differently for each type
	// (left out, or replaced): a name of its is one of gamegate's when it
	// starts as gamegate's does up to the first byte past ASCII.
	var ours []string
	for _, p := range st.Players {
		if i := strings.IndexFunc(p.Name, func(r rune) bool { return r >= 0x80 }); i >= 0 {
			ours = append(ours, p.Name[:i])
		} else {
			ours = append(ours, p.Name)
		}
	}
	if len(qs[0].Players) == 0 {
		t.Error("quakestat read no players")
	}
	for _, p := range qs[0].Players {
		name := p.Name
		if p.Player != "" { // -gs2 names the field as the server does
			name = p.Player
		}
		if !slices.ContainsFunc(ours, func(o string) bool { return strings.HasPrefix(name, o) }) {
			t.Errorf("quakestat's player %q is not one of gamegate's %q", name, ours)
		}
	}
}
