package caddyquery

import (
	"strings"
	"testing"

	"github.com/gamegate/gamegate/handlers/quake3"
	"github.com/gamegate/gamegate/handlers/query"
)

// Ad hoc by game: a game not allowed is 403, an unknown one 404, one whose
// protocol this build lacks 501 naming it, and one whose protocol could
// not be set up on its defaults 501 saying so; an allowed one gets its
// protocol and its port rules.
func TestAdHocGamesAnswers(t *testing.T) {
	quake3 := &QueryProtocolModule[quake3.Config, *quake3.Config]{name: "quake3"}
	for _, c := range []struct {
		id        string
		allowed   map[string]bool
		protocols map[string]query.Protocol
		status    int
		contains  string
	}{
		{"openarena", nil, map[string]query.Protocol{"quake3": quake3}, 200, ""},
		{"openarena", map[string]bool{"openarena": true}, map[string]query.Protocol{"quake3": quake3}, 200, ""},
		{"rust", map[string]bool{"openarena": true}, map[string]query.Protocol{"quake3": quake3}, 403, "may not be queried ad hoc"},
		{"nosuchgame", nil, nil, 404, "no game server or game"},
		{"ffow", nil, nil, 501, "needs the query protocol ffow (GameDig's ffow), which this gateway does not speak"},
		{"openarena", nil, nil, 501, "needs settings of its own"},
	} {
		gm, e := adHocGames(c.allowed, c.protocols)(c.id)
		switch {
		case c.status == 200 && (e != nil || gm.Protocol != quake3):
			t.Errorf("%s: got %v, %v; want quake3", c.id, gm.Protocol, e)
		case c.status == 200:
			if p, err := gm.QueryPort(0); p != 27960 || err != nil {
				t.Errorf("%s: query port %d, %v; want 27960", c.id, p, err)
			}
		case e == nil || e.HTTPStatus != c.status || !strings.Contains(e.Message, c.contains):
			t.Errorf("%s: got %v; want %d containing %q", c.id, e, c.status, c.contains)
		}
	}
}
