package caddyquery_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	_ "github.com/gamegate/gamegate"
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/games"
)

// docs/games.md is what `gamegate games --markdown` prints now.
func TestGamesPageIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := caddyquery.WriteGamesMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "games.md")
	if os.Getenv("GAMEGATE_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("docs/games.md is not current: go run ./cmd/gamegate games --markdown > docs/games.md")
	}
}

// The coverage counts the games whose gamegate protocol is a registered
// gamegate.query module: counted here from Caddy's registry, module by
// module. Each GameDig protocol maps to one gamegate protocol; only a
// game of gamegate.json's may go elsewhere.
func TestGamesCoverageFromRegisteredModules(t *testing.T) {
	c := games.Default()
	want := 0
	for _, m := range caddy.GetModules("gamegate.query") {
		for _, g := range c.Games() {
			if g.GamegateProtocol == m.ID.Name() {
				want++
			}
		}
	}
	own := games.GamegateDecisions()
	served := make(map[string]string) // GameDig protocol → gamegate protocol
	for _, g := range c.Games() {
		if _, single := own.Games[g.ID]; single {
			continue
		}
		if m, seen := served[g.Protocol]; seen && m != g.GamegateProtocol {
			t.Errorf("GameDig's %s is served by both %s and %s", g.Protocol, m, g.GamegateProtocol)
		}
		served[g.Protocol] = g.GamegateProtocol
	}
	l := caddyquery.GameListing()
	if l.Coverage.Queryable != want || l.Coverage.Games != len(c.Games()) || len(l.Games) != len(c.Games()) {
		t.Errorf("coverage %+v of %d listed, want %d queryable of %d", l.Coverage, len(l.Games), want, len(c.Games()))
	}
	for _, g := range l.Games {
		if g.Queryable != caddyquery.QueryProtocolRegistered(g.GamegateProtocol) {
			t.Errorf("%s: queryable %v, its protocol %s registered %v", g.ID, g.Queryable, g.GamegateProtocol, !g.Queryable)
		}
	}
	t.Logf("%d of %d games queryable (%.1f%%) over %d GameDig protocols", l.Coverage.Queryable, l.Coverage.Games, l.Coverage.Percent, len(served))
	// gamegate speaks the protocols behind at least 85% of GameDig's
	// games; a change that drops a protocol below that says so here.
	if l.Coverage.Queryable*100 < 85*l.Coverage.Games {
		t.Errorf("%d of %d games queryable (%.1f%%), want at least 85%%", l.Coverage.Queryable, l.Coverage.Games, l.Coverage.Percent)
	}
}

// tokenClashes are game IDs (or v4 IDs) that name a gamegate protocol
// which does not serve that game. A protocol's name wins in a server
// line (so every former configuration reads as before); the game is then
// named by another of its IDs, as docs/handlers/game_query.md says.
var tokenClashes = map[string]string{
	"ase": "Ark: Survival Evolved (valve, so a2s) vs the All-Seeing-Eye protocol; Ark is also arkse, its v4 ID",
}

// unrecordedClashes returns the protocols among names that are also a
// game ID (or v4 ID) of a game they do not serve, and are not recorded.
func unrecordedClashes(names []string, recorded map[string]string) []string {
	var out []string
	for _, name := range names {
		g, ok := games.Default().Lookup(name)
		if _, known := recorded[name]; ok && g.GamegateProtocol != name && !known {
			out = append(out, name)
		}
	}
	return out
}

// A server line's token that is both a registered protocol and a game
// means the same either way, except for the recorded clashes: a new
// protocol named like a game it does not serve must be recorded and
// documented (or mapped in gamegate.json), never silently change what a
// game ID means.
func TestGameTokensAndProtocolsAgree(t *testing.T) {
	var names []string
	for _, m := range caddy.GetModules("gamegate.query") {
		names = append(names, m.ID.Name())
	}
	if bad := unrecordedClashes(names, tokenClashes); len(bad) > 0 {
		t.Errorf("protocols named like games they do not serve: %v: record them in tokenClashes and docs/handlers/game_query.md, or map the game's protocol in gamegate.json", bad)
	}
	// Protocols other builds may have: quake2 and doom3 serve their
	// games, ase does not (recorded), a mumble module would not serve
	// the game mumble (GameDig's mumbleping) unless gamegate.json maps
	// it.
	if got := unrecordedClashes([]string{"quake2", "doom3", "quake1", "ase", "mumble"}, tokenClashes); !slices.Equal(got, []string{"mumble"}) {
		t.Errorf("clashes of quake2, doom3, quake1, ase, mumble: got %v, want [mumble]", got)
	}
	for id := range tokenClashes {
		if _, ok := games.Default().Lookup(id); !ok {
			t.Errorf("tokenClashes: no game %q", id)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "handlers", "game_query.md"))
	if err != nil {
		t.Fatal(err)
	}
	for id := range tokenClashes {
		if !strings.Contains(string(doc), "`"+id+"`") {
			t.Errorf("docs/handlers/game_query.md does not name the clash of %q", id)
		}
	}
}
