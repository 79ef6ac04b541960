package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// A TrackMania Forever-like GbxRemote fixture (colour codes, passwords in
// GetServerOptions, a callback before the players, a login required) over
// TCP, through game_query and GameDig, both logged in as the same User.
func TestNadeoAgainstGamedig(t *testing.T) {
	s := testutil.ExampleNadeo()
	testutil.StartNadeo(t, s)
	t.Setenv("GAMEGATE_TEST_NADEO_PASSWORD", s.Password)
	st := fixtureCheck{protocol: "nadeo", gameID: "trackmaniaforever", addr: s.Addr, block: ` {
				login User
				password {env.GAMEGATE_TEST_NADEO_PASSWORD}
			}`,
		gamedigOptions: []string{"--login", s.Login, "--password", s.Password},
		rawKnown: map[string]string{
			"GetServerOptions": "gamegate leaves out the server's player and spectator passwords",
		},
	}.run(t)
	if st["name"] != "Gâte TM" || st["map"] != "A01-Race" || st["numplayers"] != float64(2) || st["password"] != true ||
		st["version"] != "2.11.26" {
		t.Errorf("gamegate read %v", st)
	}
	raw := st["raw"].(map[string]any)
	opts := raw["GetServerOptions"].(map[string]any)
	if _, ok := opts["Password"]; ok || opts["Comment"] != "hello & welcome" || raw["gametype"] != "Time Attack" {
		t.Errorf("raw: %v", raw)
	}
	for _, secret := range []string{s.Password, "race-pa55", "spec-pa55"} {
		if b, _ := json.Marshal(st); strings.Contains(string(b), secret) {
			t.Errorf("the status holds the secret %q", secret)
		}
	}
	if s.Authenticated.Load() < 2 {
		t.Errorf("%d connections authenticated, want gamegate's and GameDig's", s.Authenticated.Load())
	}
}
