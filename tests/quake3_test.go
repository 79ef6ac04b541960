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

// flexInt reads a JSON number or a string holding one (GameDig sends
// maxplayers as a string for Quake 3).
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	n, err := strconv.Atoi(strings.Trim(string(b), `"`))
	*f = flexInt(n)
	return err
}

// A real OpenArena server (ioquake3) with bots, asked through the gateway,
// by qstat and by GameDig: the three must agree on what the players of the
// server browser see.
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

	var gd struct {
		Name       string
		Map        string
		NumPlayers int
		MaxPlayers flexInt
		Players    []struct{ Name string }
		Bots       []struct{ Name string }
	}
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
	var qsNames, gdNames []string
	for _, p := range qs[0].Players {
		qsNames = append(qsNames, p.Name)
	}
	for _, p := range append(gd.Players, gd.Bots...) {
		gdNames = append(gdNames, p.Name)
	}
	slices.Sort(qsNames)
	slices.Sort(gdNames)

	ours := names(st.Players)
	for _, c := range []struct {
		field      string
		us, qs, gd any
	}{
		{"name", st.Name, qs[0].Name, gd.Name},
		{"map", st.Map, qs[0].Map, gd.Map},
		{"max players", st.MaxPlayers, qs[0].MaxPlayers, int(gd.MaxPlayers)},
		{"player count", st.NumPlayers, qs[0].NumPlayers, gd.NumPlayers},
		{"player names", strings.Join(ours, ","), strings.Join(qsNames, ","), strings.Join(gdNames, ",")},
	} {
		if fmt.Sprint(c.us) != fmt.Sprint(c.qs) || fmt.Sprint(c.us) != fmt.Sprint(c.gd) {
			t.Errorf("%s: gamegate %v, quakestat %v, gamedig %v", c.field, c.us, c.qs, c.gd)
		}
	}
	// And what the server was started with.
	if st.Name != "Gate Arena" || st.Map != oa.Map || st.MaxPlayers != 8 || st.NumPlayers != bots || st.Bots != bots ||
		st.Raw["sv_hostname"] != oa.Hostname || st.Protocol != "quake3" {
		t.Errorf("gamegate's status: got %s", r.body)
	}
	if strings.Join(ours, ",") != strings.Join(botNames, ",") {
		t.Errorf("player names: got %v, want the bots %v", ours, botNames)
	}
	if len(gd.Bots) != bots || st.Players[0].Raw["bot"] != true {
		t.Errorf("bots: gamedig lists %d, gamegate marks %v", len(gd.Bots), st.Players[0].Raw)
	}

	// getinfo through the gateway: the short answer, the same server.
	var info map[string]any
	if r := getJSON(t, gate+"/query/arena/info", &info); r.status != 200 || info["mapname"] != oa.Map ||
		info["hostname"] != oa.Hostname || info["clients"] != strconv.Itoa(bots) {
		t.Errorf("GET /query/arena/info: %d %s", r.status, r.body)
	}
}
