package tests

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// A real OpenArena server (ioquake3) with bots, asked through the gateway,
// by qstat and by GameDig: the three must agree on what the players of the
// server browser see, and gamegate's status has GameDig's shape: the bots
// (ping 0) apart from the people.
func TestQuake3AgainstOpenArena(t *testing.T) {
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	t.Logf("independent clients: quakestat %s, gamedig %s", testutil.QuakestatVersion(t), gamedigVersion)

	botNames := []string{"Grism", "Major", "Sarge"}
	bots := len(botNames)
	oa := testutil.StartOpenArena(t, "^1Gate ^7Arena", 8, botNames...)
	gate := startQueryGate(t, fmt.Sprintf(`
			server arena %s quake3 {
				timeout 5s
			}
			rate_limit 5`, oa.Addr))

	var st query.Status
	r := getJSON(t, gate+"/query/arena", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/arena: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)

	out, err := exec.Command("quakestat", "-json", "-P", "-q3s", oa.Addr).Output()
	if err != nil {
		t.Fatalf("quakestat: %v: %s", err, out)
	}
	t.Logf("quakestat: %s", out)
	var qs []struct {
		Status     string
		Name       string
		Map        string
		NumPlayers int
		MaxPlayers int
		Players    []struct{ Name string }
	}
	if err := json.Unmarshal(out, &qs); err != nil || len(qs) != 1 || qs[0].Status != "online" {
		t.Fatalf("quakestat printed %s (%v)", out, err)
	}

	var gd map[string]any
	gdOut := testutil.Gamedig(t, "openarena", oa.Addr, &gd)
	t.Logf("gamedig: %s", gdOut)

	names := func(ps []query.Player) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	var qsNames []string
	for _, p := range qs[0].Players {
		qsNames = append(qsNames, p.Name)
	}
	slices.Sort(qsNames)

	ours := names(append(slices.Clone(st.Players), st.Bots...))
	for _, c := range []struct {
		field  string
		us, qs any
	}{
		{"name", st.Name, qs[0].Name},
		{"map", st.Map, qs[0].Map},
		{"max players", st.MaxPlayers, qs[0].MaxPlayers},
		{"player count", st.NumPlayers, qs[0].NumPlayers},
		{"player names", strings.Join(ours, ","), strings.Join(qsNames, ",")},
	} {
		if fmt.Sprint(c.us) != fmt.Sprint(c.qs) {
			t.Errorf("%s: gamegate %v, quakestat %v", c.field, c.us, c.qs)
		}
	}
	// GameDig, field by field in its own result's shape: its 0 players
	// and 3 bots, and its two type bugs not copied.
	compareGamedig(t, fmt.Sprintf("OpenArena with %d bots: gamegate quake3 against gamedig %s --type openarena", bots, gamedigVersion),
		[]byte(r.body), gdOut, map[string]gamedigKnown{
			"maxplayers": {"type", "a string (sv_maxclients as sent)"},
			"password":   {"type", `a string ("0"/"1", g_needpass as sent)`},
		})
	// And what the server was started with.
	if st.Name != "Gate Arena" || st.Map != oa.Map || st.MaxPlayers != 8 || st.NumPlayers != bots || len(st.Players) != 0 ||
		len(st.Bots) != bots || st.Raw["sv_hostname"] != oa.Hostname || st.Protocol != "quake3" || st.Connect != oa.Addr {
		t.Errorf("gamegate's status: got %s", r.body)
	}
	if strings.Join(names(st.Bots), ",") != strings.Join(botNames, ",") || st.Bots[0].Raw["bot"] != true {
		t.Errorf("bots: got %+v, want the bots %v", st.Bots, botNames)
	}

	// getinfo through the gateway: the short answer, the same server.
	var info map[string]any
	if r := getJSON(t, gate+"/query/arena/info", &info); r.status != 200 || info["mapname"] != oa.Map ||
		info["hostname"] != oa.Hostname || info["clients"] != strconv.Itoa(bots) {
		t.Errorf("GET /query/arena/info: %d %s", r.status, r.body)
	}
}
