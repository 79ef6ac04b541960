package serverlist

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
)

// entries are a page's servers as JSON objects, by name.
func (r *rig) entries(t *testing.T, from, target string) map[string]map[string]any {
	t.Helper()
	w, _ := r.get(t, from, target, nil)
	var p struct{ Servers []map[string]any }
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("%s: %v: %s", target, err, w.Body)
	}
	out := map[string]map[string]any{}
	for _, s := range p.Servers {
		out[s["name"].(string)] = s
	}
	return out
}

// Each entry names its game as the game catalogue does where it can be
// told (a Quake 3 server's status's gamename, a DarkPlaces game's
// registered name, a game_query server's configured game), with its ID,
// and keeps the registered name otherwise; a game with a join URL has
// one made of the listed address alone, whatever the server says.
func TestGameAndJoin(t *testing.T) {
	const hostile = `javascript:alert(document.domain)//`
	r := newRig(t, map[string]*query.Status{
		"127.0.0.1:1": {Name: "Red Arena", Protocol: "quake3", NumPlayers: 3, MaxPlayers: 8,
			Raw: map[string]any{"gamename": "baseoa", "com_gamename": "Quake3Arena"}},
	})
	p := &fakeProtocol{live: map[string]*query.Status{
		"127.0.0.1:27015": {Name: hostile, Connect: hostile, Version: hostile, Raw: map[string]any{"gamename": hostile}},
		"cs.test:27016":   {Name: "Named", Raw: map[string]any{}},
		"127.0.0.1:27017": {Name: "Unknown", Raw: map[string]any{"gamename": "Counter-Strike 2"}},
	}}
	gw, err := query.NewGateway(query.Config{Now: r.clock.Now, Servers: map[string]query.Server{
		"cs":      {Name: "cs", Address: "127.0.0.1:27015", Protocol: p, Game: "counterstrike2"},
		"named":   {Name: "named", Address: "cs.test:27016", Protocol: p, Game: "cs2"}, // a v4 ID
		"unknown": {Name: "unknown", Address: "127.0.0.1:27017", Protocol: p},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	r.list = r.newList(t, Config{Gateways: func() []*query.Gateway { return []*query.Gateway{gw} },
		LookupHost: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	var got map[string]map[string]any
	testutil.WaitFor(t, "every status", func() bool {
		got = r.entries(t, "127.0.0.1:9", "/")
		return got["Red Arena"] != nil && got[hostile] != nil && got["Named"] != nil && got["Unknown"] != nil
	})
	for _, tc := range []struct{ name, game, id, join string }{
		{"Red Arena", "OpenArena", "openarena", ""},
		{"Full", "Nexuiz", "nexuiz", ""},        // not queried: its infoResponse's gamename
		{"Empty", "Quake3Arena", "", ""},        // nothing better known
		{"Unknown", "Counter-Strike 2", "", ""}, // configured by protocol alone
		{hostile, "Counter-Strike 2", "counterstrike2", "steam://connect/127.0.0.1:27015"},
		{"Named", "Counter-Strike 2", "counterstrike2", "steam://connect/cs.test:27016"},
	} {
		e := got[tc.name]
		if e == nil {
			t.Errorf("%s: not listed", tc.name)
			continue
		}
		id, hasID := e["game_id"]
		join, hasJoin := e["join"]
		if e["game"] != tc.game || hasID != (tc.id != "") || hasID && id != tc.id || hasJoin != (tc.join != "") || hasJoin && join != tc.join {
			t.Errorf("%s: game %v, game_id %v, join %v; want %q, %q, %q", tc.name, e["game"], id, join, tc.game, tc.id, tc.join)
		}
	}
	// The game filter takes the name or the ID.
	for _, q := range []string{"/?game=openarena", "/?game=OpenArena"} {
		if e := r.entries(t, "127.0.0.1:9", q); len(e) != 1 || e["Red Arena"] == nil {
			t.Errorf("%s: %d servers, want Red Arena", q, len(e))
		}
	}
}
