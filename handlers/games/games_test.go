package games

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// The catalogue holds every game of the pinned GameDig package with its
// facts: an ID missing, one too many, or a name, v4 ID, protocol or port
// that differs fails, unless gamegate.json overrides that very field with
// a reason.
func TestCatalogueMatchesGameDig(t *testing.T) {
	out := testutil.RunNode(t, 30*time.Second, "../../scripts/games-catalogue.mjs")
	var live gamedigFile
	if err := json.Unmarshal(out, &live); err != nil {
		t.Fatalf("scripts/games-catalogue.mjs printed %.300s: %v", out, err)
	}
	c := Default()
	if c.GamedigVersion != live.GamedigVersion {
		t.Errorf("catalogue from GameDig %s, tests/peers has %s: regenerate gamedig.json", c.GamedigVersion, live.GamedigVersion)
	}
	d := GamegateDecisions()
	seen := make(map[string]bool)
	for _, want := range live.Games {
		seen[want.ID] = true
		got, ok := c.Lookup(want.ID)
		if !ok || got.ID != want.ID {
			t.Errorf("%s (%s): missing", want.ID, want.Name)
			continue
		}
		o, overridden := d.Games[want.ID]
		differs := func(field string, same bool, overrides bool) {
			if !same && !(overridden && overrides && o.Why != "") {
				t.Errorf("%s: %s differs from GameDig's without a reason in gamegate.json: got %s", want.ID, field, show(got))
			}
		}
		differs("name", got.Name == want.Name, false)
		differs("old_ids", slices.Equal(got.OldIDs, want.OldIDs), false)
		differs("protocol", got.Protocol == want.Protocol, o.Protocol != "")
		differs("port", got.Port == want.Port, o.Port != nil)
		differs("port_query", got.QueryPort == want.QueryPort, o.QueryPort != nil)
		differs("port_query_offset", slices.Equal(got.QueryPortOffsets, want.QueryPortOffsets), o.QueryPortOffsets != nil)
		for _, old := range want.OldIDs {
			if g, ok := c.Lookup(old); !ok || g.ID != want.ID {
				t.Errorf("%s: its v4 ID %q finds %q", want.ID, old, g.ID)
			}
		}
	}
	for _, g := range c.Games() {
		if !seen[g.ID] {
			t.Errorf("%s: not in GameDig %s", g.ID, live.GamedigVersion)
		}
	}
	t.Logf("%d games of GameDig %s, %d overridden by gamegate.json", len(live.Games), live.GamedigVersion, len(d.Games))
}

func show(g Game) string { b, _ := json.Marshal(g); return string(b) }

// The checks of the catalogue's files refuse what would make a game
// unusable or a difference unexplained.
func TestParseRefuses(t *testing.T) {
	own := []byte(`{"protocols": {}, "games": {}}`)
	for _, c := range []struct{ name, facts, own string }{
		{"duplicate ID", `{"games": [{"id":"a","name":"A","protocol":"p"},{"id":"a","name":"B","protocol":"p"}]}`, ""},
		{"shared v4 ID", `{"games": [{"id":"a","name":"A","protocol":"p","old_ids":["x"]},{"id":"b","name":"B","protocol":"p","old_ids":["x"]}]}`, ""},
		{"bad ID", `{"games": [{"id":"A b","name":"A","protocol":"p"}]}`, ""},
		{"port", `{"games": [{"id":"a","name":"A","protocol":"p","port":70000}]}`, ""},
		{"no protocol", `{"games": [{"id":"a","name":"A"}]}`, ""},
		{"override without why", `{"games": [{"id":"a","name":"A","protocol":"p"}]}`, `{"games": {"a": {"port": 1}}}`},
		{"override of no game", `{"games": [{"id":"a","name":"A","protocol":"p"}]}`, `{"games": {"b": {"port": 1, "why": "x"}}}`},
		{"mapping without why", `{"games": [{"id":"a","name":"A","protocol":"p"}]}`, `{"protocols": {"p": {"gamegate_protocol": "q"}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := own
			if c.own != "" {
				o = []byte(c.own)
			}
			if _, _, err := parse([]byte(c.facts), o); err == nil {
				t.Errorf("parse accepted %s", c.facts)
			}
		})
	}
	if _, _, err := parse(gamedigJSON, gamegateJSON); err != nil {
		t.Fatalf("the embedded catalogue: %v", err)
	}
}

func TestLookupAndProtocols(t *testing.T) {
	c := Default()
	for _, tc := range []struct{ token, id, protocol, gamegate string }{
		{"openarena", "openarena", "quake3", "quake3"},
		{"rust", "rust", "valve", "a2s"},
		{"arkse", "ase", "valve", "a2s"}, // v4 ID
		{"ase", "ase", "valve", "a2s"},
		{"q3a", "q3a", "quake3", "quake3"},
		{"quake3", "q3a", "quake3", "quake3"}, // q3a's v4 ID
		{"xonotic", "xonotic", "xonotic", "quake3"},
		{"warfork", "warfork", "warsow", "quake3"},
		{"counterstrike15", "counterstrike15", "goldsrc", "a2s"},
		{"mbe", "mbe", "minecraft", "bedrock"},
		{"minecraft", "minecraft", "minecraft", "minecraft"},
		{"teamspeak3", "teamspeak3", "teamspeak3", "teamspeak3"},
		{"ffow", "ffow", "ffow", "ffow"},
	} {
		g, ok := c.Lookup(tc.token)
		if !ok || g.ID != tc.id || g.Protocol != tc.protocol || g.GamegateProtocol != tc.gamegate {
			t.Errorf("Lookup(%q): got %s, %v; want id %s, protocol %s, gamegate %s", tc.token, show(g), ok, tc.id, tc.protocol, tc.gamegate)
		}
	}
	if g, ok := c.Lookup("nosuchgame"); ok {
		t.Errorf("Lookup(nosuchgame) found %s", show(g))
	}
}

func TestQueryPortFor(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		id          string
		given, want int
		err         bool
	}{
		{"openarena", 0, 27960, false}, // port_query only
		{"openarena", 27961, 27961, false},
		{"rust", 0, 28015, false}, // port only, no offset
		{"rust", 28020, 28020, false},
		{"ase", 0, 27015, false},     // port 7777, port_query 27015
		{"ase", 7777, 27015, false},  // the default game port: its query port
		{"ase", 7780, 7780, false},   // another: the given port
		{"dayz", 2302, 27016, false}, // offset 24714
		{"dayz", 0, 27016, false},
		{"vrising", 27015, 27016, false}, // offsets [1, 15]: the first
		{"ut3", 7777, 6500, false},       // offset -1277
		{"ut3", 1000, 0, true},           // below 1
		{"brink", 0, 0, true},            // an offset and no port
		{"brink", 27015, 27016, false},
		{"discord", 0, 0, true}, // no port at all
	} {
		g, _ := c.Lookup(tc.id)
		got, err := g.QueryPortFor(tc.given)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s.QueryPortFor(%d): got %d, %v; want %d (error: %v)", tc.id, tc.given, got, err, tc.want, tc.err)
		}
		if tc.id == "brink" && tc.given == 0 && !errors.Is(err, ErrNoPort) {
			t.Errorf("brink without a port: %v, want ErrNoPort", err)
		}
	}
}

func TestCoverage(t *testing.T) {
	c := Default()
	cov := c.Coverage(func(p string) bool { return p == "a2s" || p == "quake3" || p == "minecraft" || p == "bedrock" })
	// valve 134 with goldsrc, dayz and sdtd; quake3 21 with warsow 2 and
	// xonotic; minecraft and mbe.
	if want := (Coverage{Games: 358, Queryable: 163, Percent: 45.5}); cov != want {
		t.Errorf("got %+v, want %+v", cov, want)
	}
	none := c.Coverage(func(string) bool { return false })
	if none.Queryable != 0 || none.Percent != 0 {
		t.Errorf("nothing registered: %+v", none)
	}
}

// The query port of every game, for a server given without a port, at
// its default game port and at another, is the first port GameDig's own
// query runner tries (read from the pinned package by running it with
// attempts that record their port), except where GameDig's first try is
// the game port itself and its next the game's query port: gamegate asks
// the query port (Ark's 7777 is asked at 27015), as QueryPortFor says.
func TestQueryPortsAsGameDigTriesThem(t *testing.T) {
	out := testutil.RunNode(t, 60*time.Second, "gamedig-query-ports.mjs")
	var tried map[string]struct{ None, Default, Other []int }
	if err := json.Unmarshal(out, &tried); err != nil {
		t.Fatalf("gamedig-query-ports.mjs printed %.300s: %v", out, err)
	}
	c := Default()
	if len(tried) != len(c.Games()) {
		t.Errorf("GameDig tried %d games, the catalogue has %d", len(tried), len(c.Games()))
	}
	checked := 0
	for id, ports := range tried {
		g, ok := c.Lookup(id)
		if !ok {
			t.Errorf("%s: not in the catalogue", id)
			continue
		}
		other := 20000
		if g.Port > 0 {
			other = g.Port + 100
		}
		for _, k := range []struct {
			name  string
			given int
			tries []int
		}{{"no port", 0, ports.None}, {"the default game port", g.Port, ports.Default}, {"another port", other, ports.Other}} {
			if len(k.tries) == 0 {
				continue // no default game port to give
			}
			got, err := g.QueryPortFor(k.given)
			want := k.tries[0]
			if k.given > 0 && want == k.given && g.QueryPort > 0 && len(k.tries) > 1 && k.tries[1] == g.QueryPort {
				want = g.QueryPort
			}
			if want == 0 { // GameDig tries without a port: gamegate needs one
				if err == nil {
					t.Errorf("%s, %s: got port %d, GameDig has none", id, k.name, got)
				}
				continue
			}
			if err != nil || got != want {
				t.Errorf("%s, %s (%d): got %d, %v; GameDig tries %v", id, k.name, k.given, got, err, k.tries)
			}
			checked++
		}
	}
	t.Logf("%d query ports as GameDig tries them", checked)
}

// A status's game name tells its game among its protocol's games: a game
// folder gamegate.json knows, an ID or a name; Quake 3's heartbeat name,
// which every ioquake3 game sends, tells none.
func TestByStatusName(t *testing.T) {
	c := Default()
	for _, tc := range []struct{ protocol, name, want string }{
		{"quake3", "baseoa", "openarena"},
		{"quake3", "BaseOA", "openarena"},
		{"quake3", "baseq3", "q3a"},
		{"quake3", "Nexuiz", "nexuiz"},
		{"quake3", "Xonotic", "xonotic"},
		{"quake3", "OpenArena", "openarena"},
		{"quake3", "Quake3Arena", ""},
		{"quake3", "", ""},
		{"a2s", "baseoa", ""}, // another protocol's games only
		{"quake3", "Counter-Strike 2", ""},
		{"a2s", "Counter-Strike 2", "counterstrike2"},
	} {
		g, ok := c.ByStatusName(tc.protocol, tc.name)
		if ok != (tc.want != "") || g.ID != tc.want {
			t.Errorf("ByStatusName(%q, %q) = %q, %v; want %q", tc.protocol, tc.name, g.ID, ok, tc.want)
		}
	}
}

// A join URL is made of the address alone, for Steam games whose query
// port is their game port; anything but an IP address or a host name as
// the host gives none, so no text a server sends can make a URL of
// another scheme.
func TestJoinURL(t *testing.T) {
	c := Default()
	game := func(id string) Game {
		g, ok := c.Lookup(id)
		if !ok {
			t.Fatalf("no game %q", id)
		}
		return g
	}
	for _, tc := range []struct {
		game, host string
		port       int
		want       string
	}{
		{"counterstrike2", "203.0.113.7", 27015, "steam://connect/203.0.113.7:27015"},
		{"counterstrike2", "2001:db8::7", 27015, "steam://connect/[2001:db8::7]:27015"},
		{"counterstrike2", "::ffff:203.0.113.7", 27015, "steam://connect/203.0.113.7:27015"},
		{"counterstrike2", "cs.example.com", 27016, "steam://connect/cs.example.com:27016"},
		{"counterstrike2", "javascript:alert(1)//", 27015, ""},
		{"counterstrike2", "a.example/../x", 27015, ""},
		{"counterstrike2", "a b", 27015, ""},
		{"counterstrike2", "fe80::1%eth0", 27015, ""},
		{"counterstrike2", "", 27015, ""},
		{"counterstrike2", "203.0.113.7", 0, ""},
		{"counterstrike2", "203.0.113.7", 65536, ""},
		{"openarena", "203.0.113.7", 27960, ""}, // no join URL known
		{"a2oa", "203.0.113.7", 2302, ""},       // a query port of its own
	} {
		if got := game(tc.game).JoinURL(tc.host, tc.port); got != tc.want {
			t.Errorf("%s.JoinURL(%q, %d) = %q, want %q", tc.game, tc.host, tc.port, got, tc.want)
		}
	}
	steam := 0
	for _, g := range c.Games() {
		if g.JoinURL("203.0.113.7", 27015) != "" {
			steam++
			if g.Protocol != "valve" && g.Protocol != "goldsrc" {
				t.Errorf("%s (%s): a Steam join URL", g.ID, g.Protocol)
			}
		}
	}
	if steam < 50 {
		t.Errorf("%d games with a Steam join URL, want the Source and GoldSrc ones (at least 50)", steam)
	}
}
