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
	// qstat reads GameSpy 1 as -gps.
	out, err := exec.Command("quakestat", "-json", "-P", "-gps", addr.String()).Output()
	if err != nil {
		t.Fatalf("quakestat: %v", err)
	}
	t.Logf("quakestat -gps: %s", out)
	var qs []struct {
		Name, Map  string
		NumPlayers int
		MaxPlayers int
		Players    []struct{ Name string }
	}
	if err := json.Unmarshal(out, &qs); err != nil || len(qs) != 1 {
		t.Fatalf("quakestat printed %s (%v)", out, err)
	}
	// qstat's JSON leaves out the bytes past ASCII.
	ascii := func(s string) string {
		return strings.Map(func(r rune) rune { return map[bool]rune{true: r, false: -1}[r < 0x80] }, s)
	}
	if qs[0].MaxPlayers != st.MaxPlayers || qs[0].NumPlayers != st.NumPlayers || qs[0].Name != ascii(st.Name) ||
		qs[0].Map != st.Map {
		t.Errorf("quakestat read %+v, gamegate %+v", qs[0], st)
	}
	// qstat lists the players of the parts that came after the first
	// (the last part, sent first here, is lost to it): each is one of
	// gamegate's.
	var ours []string
	for _, p := range st.Players {
		ours = append(ours, ascii(p.Name))
	}
	if len(qs[0].Players) == 0 {
		t.Error("quakestat read no players")
	}
	for _, p := range qs[0].Players {
		if !slices.Contains(ours, p.Name) {
			t.Errorf("quakestat's player %q is not one of gamegate's %q", p.Name, ours)
		}
	}
}

// A GameSpy 3 status behind its challenge, in two parts sent out of
// order, with player and team columns and Windows-1252 names, as gamegate
// and GameDig read it.
func TestGameSpy3AgainstGamedig(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	addr := testutil.ServeGameSpy3(t, f)
	st := gamespyAgainstGamedig(t, "gamespy3", "", "battlefield2", addr, f)
	if st.Players[2].Raw["score"] != -2.0 || st.Players[1].Raw["team"] != 1.0 {
		t.Errorf("players' raw: %+v", st.Players)
	}
}

// An answer in more datagrams than max_packets is refused as unusable
// (502), not gathered.
func TestGameSpyAnswerBudgets(t *testing.T) {
	f := testutil.DefaultGameSpyFixture()
	gs1, gs3 := testutil.ServeGameSpy1(t, f), testutil.ServeGameSpy3(t, f)
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
