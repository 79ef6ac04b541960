package tests

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// quakestat runs qstat with -json against addr as the given server type
// and returns its one result.
func quakestat(t *testing.T, kind, addr string) map[string]any {
	t.Helper()
	out, err := exec.Command("quakestat", "-json", "-P", kind, addr).Output()
	if err != nil {
		t.Fatalf("quakestat %s %s: %v: %s", kind, addr, err, out)
	}
	t.Logf("quakestat %s: %s", kind, out)
	var qs []map[string]any
	if err := json.Unmarshal(out, &qs); err != nil || len(qs) != 1 {
		t.Fatalf("quakestat printed %s (%v)", out, err)
	}
	return qs[0]
}

// A real Murmur (Debian's mumble-server) answers its UDP ping through the
// gateway, asked by protocol name and by GameDig's game ID, and gamegate's
// answer agrees with GameDig's --type mumble and qstat's -mumble field by
// field, and with the server's own users setting.
func TestMumblePingAgainstMurmur(t *testing.T) {
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	const users = 17
	addr := testutil.StartMurmur(t, users)
	gate := startQueryGate(t, fmt.Sprintf(`
			server voice %s mumbleping
			server byid %s mumble`, addr, addr))

	var st query.Status
	r := getJSON(t, gate+"/query/voice", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/voice: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	var byID query.Status
	if r := getJSON(t, gate+"/query/byid", &byID); r.status != 200 || byID.Protocol != "mumbleping" ||
		byID.Version != st.Version || byID.MaxPlayers != users {
		t.Errorf("GET /query/byid (game ID mumble): %d %s", r.status, r.body)
	}

	var gd map[string]any
	gdOut := testutil.Gamedig(t, "mumble", addr, &gd)
	t.Logf("gamedig: %s", gdOut)
	compareGamedig(t, "Murmur 1.3.4: gamegate mumbleping against gamedig "+gamedigVersion+" --type mumble",
		[]byte(r.body), gdOut, nil)
	// raw: GameDig's four fields, by the same names, with the same values.
	gdRaw, _ := gd["raw"].(map[string]any)
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
	// And what the server was started with: Debian's 1.3.4, users=17.
	if st.MaxPlayers != users || st.NumPlayers != 0 || st.Version != "1.3.4" || st.Connect != addr || st.Protocol != "mumbleping" {
		t.Errorf("gamegate's status: got %s", r.body)
	}
}
