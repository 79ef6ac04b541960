package query

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// Ad-hoc targets by game: /{game}/{host[:port]}[/{command}] asks the
// game's protocol at the game's query port, inside allow_targets; a game
// the resolver refuses answers its error without a query; a configured
// server's name wins over a game ID.
func TestAdHocByGame(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
		c.Games = func(id string) (AdHocGame, *Error) {
			switch id {
			case "oa":
				return AdHocGame{Protocol: r0(c), QueryPort: func(given int) (int, error) {
					if given == 0 {
						return 27960, nil
					}
					if given == 1 {
						return 0, errors.New("no such port")
					}
					return given + 1, nil
				}}, nil
			case "ts":
				return AdHocGame{}, Errorf(http.StatusNotImplemented, "the game ts needs the protocol teamspeak3, which gamegate does not speak")
			}
			return AdHocGame{}, Errorf(http.StatusNotFound, "no game %q", id)
		}
	})
	for _, tc := range []struct {
		path     string
		want     int
		contains string
	}{
		{"/oa/192.0.2.7", 200, `"address":"192.0.2.7:27960"`},
		{"/oa/192.0.2.7:27000", 200, `"address":"192.0.2.7:27001"`},
		{"/oa/192.0.2.7:27000/echo", 403, `may not be sent`}, // the test protocol declares no read-only commands
		{"/oa/192.0.2.7:1", 400, "no such port"},
		{"/oa/198.51.100.1:27000", 403, "outside the networks"},
		{"/ts/192.0.2.7", 501, "teamspeak3"},
		{"/nosuch/192.0.2.7", 404, `no game \"nosuch\"`},
		{"/arena", 200, `"address":"192.0.2.1:27960"`},
		{"/arena/echo", 200, `"command":"echo"`}, // the named server, not a game
		{"/oa/a/b/c", 404, "want /{server}"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w := r.do("GET", tc.path, "")
			if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.contains) {
				t.Fatalf("got %d %s, want %d containing %s", w.Code, w.Body, tc.want, tc.contains)
			}
		})
	}
	calls := r.proto.calls.Load()
	w := r.do("POST", "/", `{"servers": ["oa/192.0.2.8", "ts/192.0.2.8"], "commands": ["status"]}`)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"address":"192.0.2.8:27960"`) || !strings.Contains(w.Body.String(), `"status":501`) {
		t.Fatalf("batch: %d %s", w.Code, w.Body)
	}
	if got := r.proto.calls.Load() - calls; got != 1 {
		t.Errorf("batch: %d queries, want 1 (ts is refused before any)", got)
	}
}

// r0 is the rig's protocol, read from its named server.
func r0(c *Config) Protocol { return c.Servers["arena"].Protocol }

// Without Games, a path of a game ID stays what it was: a name that is
// not configured.
func TestAdHocByGameOff(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
	})
	if w := r.do("GET", "/oa/192.0.2.7:27960", ""); w.Code != 404 || r.proto.calls.Load() != 0 {
		t.Fatalf("got %d %s after %d calls, want 404 and none", w.Code, w.Body, r.proto.calls.Load())
	}
	if err := (Config{Games: func(string) (AdHocGame, *Error) { return AdHocGame{}, nil }}).Validate(); err == nil || !strings.Contains(err.Error(), "allow_targets") {
		t.Errorf("Games without allow_targets: %v", err)
	}
}
