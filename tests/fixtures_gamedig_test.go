package tests

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// fixtureCheck is one protocol's fixture server asked through a real
// Caddy's game_query and by GameDig's own client, which must read the
// same: the fixture is only trusted where the reference agrees with it.
type fixtureCheck struct {
	protocol, gameID, addr string
	// known are GameDig's own differences (see compareGamedig).
	known map[string]gamedigKnown
	// rawKnown are raw keys whose values differ, and why.
	rawKnown map[string]string
	// block is the protocol's options block in game_query ("" for none);
	// gamedigOptions are GameDig's further options (a login).
	block          string
	gamedigOptions []string
}

// run queries the fixture both ways, compares them field by field and
// every raw key GameDig has by value, and returns gamegate's status.
func (c fixtureCheck) run(t *testing.T) map[string]any {
	t.Helper()
	gamedigVersion := testutil.NpmVersion(t, "gamedig")
	block := c.block
	if block != "" && !strings.HasPrefix(block, " ") {
		block = " " + block
	}
	gate := startQueryGate(t, fmt.Sprintf(`
			server fixture %s %s%s`, c.addr, c.protocol, block))
	var st map[string]any
	r := getJSON(t, gate+"/query/fixture", &st)
	if r.status != 200 {
		t.Fatalf("GET /query/fixture: %d %s", r.status, r.body)
	}
	t.Logf("gamegate: %s", r.body)
	var gd map[string]any
	gdOut := testutil.GamedigAt(t, c.gameID, c.addr, &gd, c.gamedigOptions...)
	t.Logf("gamedig: %s", gdOut)
	compareGamedig(t, fmt.Sprintf("gamegate %s against gamedig %s --type %s on a fixture", c.protocol, gamedigVersion, c.gameID),
		[]byte(r.body), gdOut, c.known)
	ours, _ := st["raw"].(map[string]any)
	theirs, _ := gd["raw"].(map[string]any)
	for k, v := range theirs {
		why, isKnown := c.rawKnown[k]
		same := reflect.DeepEqual(ours[k], v)
		switch {
		case isKnown && same:
			t.Errorf("raw.%s: the known difference (%s) is no longer seen: both %v", k, why, v)
		case !isKnown && !same:
			t.Errorf("raw.%s: gamegate %v, gamedig %v", k, ours[k], v)
		}
	}
	if len(theirs) == 0 {
		t.Errorf("gamedig's raw is empty: nothing compared")
	}
	// The raw command answers the status's raw data.
	var raw map[string]any
	if r := getJSON(t, gate+"/query/fixture/raw", &raw); r.status != 200 || !reflect.DeepEqual(raw, ours) {
		t.Errorf("GET /query/fixture/raw: %d %s, want the status's raw", r.status, r.body)
	}
	return st
}

// quakestat runs qstat against the fixture with the server type flag and
// returns its one server's JSON.
func quakestat(t *testing.T, flag, addr string) map[string]any {
	t.Helper()
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	out, err := exec.Command("quakestat", "-json", "-nnx", "-P", "-R", flag, addr).Output()
	if err != nil {
		t.Fatalf("quakestat %s %s: %v: %s", flag, addr, err, out)
	}
	t.Logf("quakestat %s: %s", flag, out)
	var qs []map[string]any
	if err := json.Unmarshal(out, &qs); err != nil || len(qs) != 1 {
		t.Fatalf("quakestat printed %s (%v)", out, err)
	}
	return qs[0]
}

// gamePortAddr is addr with its port moved by delta: the game port an
// independent client is given when it asks a fixed offset from it.
func gamePortAddr(t *testing.T, addr string, delta int) string {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	return netip.AddrPortFrom(ap.Addr(), uint16(int(ap.Port())+delta)).String()
}

// fieldPair is a field as gamegate and an independent client read it.
type fieldPair struct {
	field     string
	ours, its any
}

// sameValues fails for every pair whose values print differently.
func sameValues(t *testing.T, client string, pairs []fieldPair) {
	t.Helper()
	for _, p := range pairs {
		if fmt.Sprint(p.ours) != fmt.Sprint(p.its) {
			t.Errorf("%s: %s: gamegate %v, %s %v", client, p.field, p.ours, client, p.its)
		}
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
