package tests

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// gateStatus asks the gateway for a server's status, failing the test
// unless it answers 200, and logs the answer.
func gateStatus(t *testing.T, url string) (query.Status, response) {
	t.Helper()
	var st query.Status
	r := getJSON(t, url, &st)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", url, r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	return st, r
}

// gamedigRaw runs GameDig's client against addr as game kind, logs its
// answer and returns it with its raw object.
func gamedigRaw(t *testing.T, kind, addr string) (out []byte, raw map[string]any) {
	t.Helper()
	var gd map[string]any
	out = testutil.Gamedig(t, kind, addr, &gd)
	t.Logf("gamedig: %s", out)
	raw, _ = gd["raw"].(map[string]any)
	return out, raw
}

// A real Murmur (Debian's mumble-server) with two users connected answers
// its UDP ping through the gateway, asked by protocol name and by GameDig's
// game ID, and gamegate's answer agrees with GameDig's --type mumble and
// qstat's -mumble field by field, and with the server's own users setting
// and the users connected.
func TestMumblePingAgainstMurmur(t *testing.T) {
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	const users = 17
	addr := testutil.StartMurmur(t, users)
	testutil.JoinMurmur(t, addr, "alice")
	testutil.JoinMurmur(t, addr, "bob")
	gate := startQueryGate(t, fmt.Sprintf(`
			server voice %s mumbleping
			server byid %s mumble`, addr, addr))

	st, r := gateStatus(t, gate+"/query/voice")
	var byID query.Status
	if r := getJSON(t, gate+"/query/byid", &byID); r.status != 200 || byID.Protocol != "mumbleping" ||
		byID.Version != st.Version || byID.MaxPlayers != users {
		t.Errorf("GET /query/byid (game ID mumble): %d %s", r.status, r.body)
	}

	gdOut, gdRaw := gamedigRaw(t, "mumble", addr)
	compareGamedig(t, "Murmur 1.3.4: gamegate mumbleping against gamedig "+gamedigVersion+" --type mumble",
		[]byte(r.body), gdOut, nil)
	// raw: GameDig's four fields, by the same names, with the same values.
	for _, k := range []string{"versionMajor", "versionMinor", "versionPatch", "allowedbandwidth"} {
		if fmt.Sprint(st.Raw[k]) != fmt.Sprint(gdRaw[k]) || gdRaw[k] == nil {
			t.Errorf("raw.%s: gamegate %v, gamedig %v", k, st.Raw[k], gdRaw[k])
		}
	}

	qs := quakestat(t, "-mumble", addr)
	if qs["status"] != "online" || fmt.Sprint(qs["numplayers"]) != fmt.Sprint(st.NumPlayers) ||
		fmt.Sprint(qs["maxplayers"]) != fmt.Sprint(st.MaxPlayers) {
		t.Errorf("quakestat -mumble: %v; gamegate: %d of %d", qs, st.NumPlayers, st.MaxPlayers)
	}
	// And what the server was started with: Debian's 1.3.4, users=17,
	// and the two users who joined.
	if st.MaxPlayers != users || st.NumPlayers != 2 || st.Version != "1.3.4" || st.Connect != addr || st.Protocol != "mumbleping" {
		t.Errorf("gamegate's status: got %s", r.body)
	}
}

// A real OpenTTD dedicated server answers its game-info query through the
// gateway, by protocol name and by GameDig's game ID, and gamegate's
// answer agrees with GameDig's --type openttd field by field, raw
// included, and with the server's own openttd.cfg. GameDig's dates are
// its own (a JavaScript Date a day or two off); gamegate's are OpenTTD's
// calendar: the start is 1 January of the configured starting year.
func TestOpenTTDAgainstRealServer(t *testing.T) {
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	cfg := testutil.OpenTTDSettings{Name: "Gate Rail", MaxClients: 10, MaxCompanies: 7, StartingYear: 1990, MapX: 7, MapY: 8, Landscape: "arctic"}
	addr := testutil.StartOpenTTD(t, cfg)
	gate := startQueryGate(t, fmt.Sprintf(`
			server rail %s openttd
			server byid %s openttd {
				attempt_timeout 2s
			}`, addr, addr))

	st, r := gateStatus(t, gate+"/query/rail")
	gdOut, gdRaw := gamedigRaw(t, "openttd", addr)
	compareGamedig(t, "OpenTTD 13.0: gamegate openttd against gamedig "+gamedigVersion+" --type openttd", []byte(r.body), gdOut, nil)
	var ours map[string]any
	var whole struct{ Raw map[string]any }
	if err := json.Unmarshal([]byte(r.body), &whole); err != nil {
		t.Fatal(err)
	}
	ours = whole.Raw
	for k, g := range gdRaw {
		switch k {
		case "date_current", "date_start", "ticks_playing":
			continue // GameDig's own arithmetic: checked against the configuration below
		}
		if fmt.Sprint(ours[k]) != fmt.Sprint(g) {
			t.Errorf("raw.%s: gamegate %v, gamedig %v", k, ours[k], g)
		}
	}

	// qstat's -ottds asks OpenTTD's UDP query, which OpenTTD 12 removed:
	// it reads no server of this version.
	if qs := quakestat(t, "-ottds", addr); qs["status"] == "online" {
		if fmt.Sprint(qs["name"]) != st.Name || fmt.Sprint(qs["maxplayers"]) != fmt.Sprint(st.MaxPlayers) {
			t.Errorf("quakestat -ottds: %v", qs)
		}
	} else {
		t.Logf("quakestat -ottds reads no OpenTTD 13 server (status %v)", qs["status"])
	}

	// And what the server was configured with.
	if st.Name != cfg.Name || st.MaxPlayers != cfg.MaxClients || st.NumPlayers != 0 || st.Version != "13.0" || st.Password ||
		ours["maxcompanies"] != float64(cfg.MaxCompanies) || ours["map_width"] != float64(int(1)<<cfg.MapX) || ours["map_height"] != float64(int(1)<<cfg.MapY) ||
		ours["landscape"] != cfg.Landscape || ours["date_start"] != "1990-01-01" || ours["dedicated"] != true || st.Connect != addr {
		t.Errorf("gamegate's status: got %s", r.body)
	}
	var byID query.Status
	if r := getJSON(t, gate+"/query/byid", &byID); r.status != 200 || byID.Name != cfg.Name || byID.Protocol != "openttd" {
		t.Errorf("GET /query/byid: %d %s", r.status, r.body)
	}
}

// A real Teeworlds 0.7 server answers its info query through the gateway,
// which GameDig cannot ask and qstat's -tees does not read (it times out:
// 0.7 answers only after a token exchange): gamegate's answer is checked
// against the server's own configuration, with a client connected, and
// against a second configuration with a password and no one connected.
func TestTeeworldsAgainstRealServer(t *testing.T) {
	cfg := testutil.TeeworldsSettings{Name: "Gate Tee", MaxClients: 12, PlayerSlots: 6, Map: "ctf2", GameType: "ctf"}
	addr := testutil.StartTeeworlds(t, cfg)
	testutil.ConnectTeeworlds(t, addr)
	locked := testutil.TeeworldsSettings{Name: "Locked Tee", MaxClients: 4, PlayerSlots: 2, Map: "dm1", GameType: "dm", Password: "secret"}
	lockedAddr := testutil.StartTeeworlds(t, locked)
	gate := startQueryGate(t, fmt.Sprintf(`
			server tee %s teeworlds
			server locked %s teeworlds {
				retries 2
			}`, addr, lockedAddr))

	for _, c := range []struct {
		server, addr string
		cfg          testutil.TeeworldsSettings
		gametype     string
		clients      int
	}{
		{"tee", addr, cfg, "CTF", 1},
		{"locked", lockedAddr, locked, "DM", 0},
	} {
		st, r := gateStatus(t, gate+"/query/"+c.server)
		if st.Name != c.cfg.Name || st.Map != c.cfg.Map || st.MaxPlayers != c.cfg.MaxClients || st.NumPlayers != c.clients ||
			st.Password != (c.cfg.Password != "") || st.Version != "0.7.5" || st.Connect != c.addr || st.Protocol != "teeworlds" ||
			st.Raw["max_players"] != float64(c.cfg.PlayerSlots) || st.Raw["max_clients"] != float64(c.cfg.MaxClients) ||
			st.Raw["gametype"] != c.gametype || st.Raw["num_players"] != float64(0) || st.Raw["num_clients"] != float64(c.clients) ||
			len(st.Players) != c.clients || len(st.Bots) != 0 {
			t.Errorf("%s: got %s, want what %+v says, and %d clients", c.server, r.body, c.cfg, c.clients)
		}
		// The connected client has sent no name yet: the server lists it
		// as connecting, not in the game (a spectator), from nowhere.
		if c.clients == 1 && (st.Players[0].Name != "(connecting)" || st.Players[0].Raw["spectator"] != true ||
			st.Players[0].Raw["country"] != float64(-1) || st.Players[0].Raw["score"] != float64(0)) {
			t.Errorf("%s: the connected client: got %+v", c.server, st.Players[0])
		}
	}

	// qstat, the one other client with a Teeworlds type, reads none of it.
	if qs := quakestat(t, "-tees", addr); qs["status"] == "online" {
		t.Logf("quakestat -tees now reads Teeworlds 0.7: %v", qs)
		if fmt.Sprint(qs["name"]) != cfg.Name {
			t.Errorf("quakestat -tees: %v", qs)
		}
	}
}
