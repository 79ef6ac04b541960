package tests

import (
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// A Farming Simulator fixture feed through game_query and GameDig, the
// server's token given as the server's option: both read it alike, and
// the token shows in no answer.
func TestFarmingSimulatorAgainstGamedig(t *testing.T) {
	const token = "f5e2a9c1d7b3token"
	s := testutil.ExampleFarmingSimulator(token)
	testutil.StartHTTPGame(t, s)
	st := fixtureCheck{protocol: "farmingsimulator", gameID: "farmingsimulator22", addr: s.Addr,
		block: "{\n\t\t\t\ttoken " + token + "\n\t\t\t}", gamedigOptions: []string{"--token", token}}.run(t)
	players, _ := st["players"].([]any)
	if st["name"] != "Gate Farm & Friends" || st["numplayers"] != float64(2) || st["maxplayers"] != float64(16) || len(players) != 2 {
		t.Errorf("gamegate read %v", st)
	}
	if mods, _ := st["raw"].(map[string]any)["mods"].([]any); len(mods) != 2 {
		t.Errorf("raw.mods: %v", mods)
	}
}

// A wrong token is refused by the server; the answer says so without the
// token, the URL or the address.
func TestFarmingSimulatorTokenNotShown(t *testing.T) {
	const token = "wrong-secret-7a1c"
	s := testutil.ExampleFarmingSimulator("the-right-one")
	testutil.StartHTTPGame(t, s)
	gate := startQueryGate(t, `
			server farm `+s.Addr+` farmingsimulator22 {
				token `+token+`
			}`)
	for _, path := range []string{"/query/farm", "/query/farm/raw"} {
		var body map[string]any
		r := getJSON(t, gate+path, &body)
		if r.status != 502 || !strings.Contains(r.body, "bad_answer") {
			t.Errorf("GET %s: %d %s, want 502 bad_answer", path, r.status, r.body)
		}
		for _, secret := range []string{token, "code=", "dedicated-server-stats", s.Addr} {
			if strings.Contains(r.body, secret) {
				t.Errorf("GET %s answered %s, which shows %q", path, r.body, secret)
			}
		}
	}
	if s.Hits.Load() == 0 {
		t.Errorf("the server was never asked")
	}
}

// The token written as an {env.X} placeholder, as the docs show it, is
// replaced when the configuration loads: the server is sent the token,
// not the placeholder.
func TestFarmingSimulatorTokenPlaceholder(t *testing.T) {
	const token = "c0ffee5e1b2token"
	t.Setenv("GAMEGATE_TEST_FS_FEED_TOKEN", token)
	s := testutil.ExampleFarmingSimulator(token)
	testutil.StartHTTPGame(t, s)
	gate := startQueryGate(t, `
			server farm `+s.Addr+` farmingsimulator22 {
				token {env.GAMEGATE_TEST_FS_FEED_TOKEN}
			}`)
	var body map[string]any
	if r := getJSON(t, gate+"/query/farm", &body); r.status != 200 || body["name"] != "Gate Farm & Friends" {
		t.Errorf("GET /query/farm: %d %s, want 200 with the feed", r.status, r.body)
	}
}
