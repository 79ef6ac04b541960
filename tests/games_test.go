package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/gamegate/gamegate/handlers/games"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// A real OpenArena server named by its game ID answers through a real
// Caddy as it does by its protocol's name, and ad hoc as
// /openarena/{host:port}; a game no registered protocol speaks is refused
// at load (configured) or answered 501 naming its protocol (ad hoc); the
// catalogue listing says what this build can query.
func TestGamesByIDAgainstOpenArena(t *testing.T) {
	oa := testutil.StartOpenArena(t, "^2Game ^7ID", 6, "Sarge")
	httpAddr := testutil.FreeTCPAddr(t)
	site := func(extra string) string {
		return fmt.Sprintf(`{
	admin off
}
http://%s {
	handle /games {
		game_catalogue
	}
	handle_path /query/* {
		game_query {
			server oa %s openarena
			server byprotocol %s quake3
			ad_hoc_games *
			allow_targets 127.0.0.0/8%s
		}
	}
}
`, httpAddr, oa.Addr, oa.Addr, extra)
	}
	testcaddy.Start(t, site(""))
	base := "http://" + httpAddr

	var byID, byProtocol, adHoc query.Status
	for path, into := range map[string]*query.Status{"/query/oa": &byID, "/query/byprotocol": &byProtocol, "/query/openarena/" + oa.Addr: &adHoc} {
		if r := getJSON(t, base+path, into); r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	for name, st := range map[string]query.Status{"by ID": byID, "by protocol": byProtocol, "ad hoc by ID": adHoc} {
		if st.Protocol != "quake3" || st.Address != oa.Addr || !strings.Contains(st.Name, "Game") || st.MaxPlayers != 6 || len(st.Bots) != 1 {
			t.Errorf("%s: got protocol %q, address %q, name %q, maxplayers %d, %d bots; want quake3 at %s, 6 and 1",
				name, st.Protocol, st.Address, st.Name, st.MaxPlayers, len(st.Bots), oa.Addr)
		}
	}

	// GameDig, asked by the same game ID, reads the same server.
	var gd struct {
		Map  string
		Bots []struct{ Name string }
	}
	testutil.Gamedig(t, "openarena", oa.Addr, &gd)
	if gd.Map != byID.Map || len(gd.Bots) != len(byID.Bots) {
		t.Errorf("GameDig --type openarena: map %q, %d bots; gamegate by game ID: map %q, %d bots", gd.Map, len(gd.Bots), byID.Map, len(byID.Bots))
	}

	// Ad hoc: a game without a protocol here, an unknown one, and the
	// networks outside allow_targets.
	for _, c := range []struct {
		path     string
		status   int
		contains string
	}{
		{"/query/ffow/127.0.0.1:5476", 501, `"type":"unsupported","message":"the game \"ffow\" (Frontlines: Fuel of War) needs the query protocol ffow`},
		{"/query/teamspeak3/127.0.0.1", 501, "teamspeak3"},
		{"/query/nosuchgame/127.0.0.1:1", 404, `no game server or game is named \"nosuchgame\"`},
		{"/query/openarena/192.0.2.1:27960", 403, "outside the networks"},
	} {
		if queryProtocolIs(c.path) {
			continue // a build that speaks it
		}
		r := request(t, "GET", base+c.path)
		if r.status != c.status || !strings.Contains(r.body, c.contains) {
			t.Errorf("GET %s: %d %s; want %d containing %s", c.path, r.status, r.body, c.status, c.contains)
		}
	}

	// The listing: every game of the catalogue, queryable as the
	// registered protocols say.
	var listing struct {
		Games []struct {
			ID               string `json:"id"`
			Name             string `json:"name"`
			Protocol         string `json:"protocol"`
			GamegateProtocol string `json:"gamegate_protocol"`
			Queryable        bool   `json:"queryable"`
			QueryPort        int    `json:"port_query"`
		} `json:"games"`
		Coverage games.Coverage `json:"coverage"`
	}
	if r := getJSON(t, base+"/games", &listing); r.status != 200 {
		t.Fatalf("GET /games: %d %s", r.status, r.body)
	}
	queryable := 0
	for _, g := range listing.Games {
		_, err := caddy.GetModule("gamegate.query." + g.GamegateProtocol)
		if g.Queryable != (err == nil) {
			t.Errorf("/games: %s queryable %v, but its protocol %s is registered: %v", g.ID, g.Queryable, g.GamegateProtocol, err == nil)
		}
		if g.Queryable {
			queryable++
		}
		if g.ID == "openarena" && (!g.Queryable || g.Protocol != "quake3" || g.QueryPort != 27960 || g.Name != "OpenArena") {
			t.Errorf("/games: openarena is %+v", g)
		}
	}
	if len(listing.Games) != len(games.Default().Games()) || listing.Coverage.Queryable != queryable || listing.Coverage.Games != len(listing.Games) {
		t.Errorf("/games: %d games, coverage %+v; counted %d queryable", len(listing.Games), listing.Coverage, queryable)
	}
	t.Logf("/games: %d of %d games queryable (%.1f%%)", listing.Coverage.Queryable, listing.Coverage.Games, listing.Coverage.Percent)
	first := request(t, "GET", base+"/games")
	if etag := first.header.Get("Etag"); etag == "" || request(t, "GET", base+"/games", "If-None-Match", etag).status != 304 {
		t.Errorf("/games: ETag %q is not answered 304", etag)
	}
	if r := request(t, "POST", base+"/games"); r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /games: %d, Allow %q; want 405, GET, HEAD", r.status, r.header.Get("Allow"))
	}

	// A configured server of a game no registered protocol speaks is
	// refused at load, naming the game and its protocol, from a Caddyfile
	// and from JSON alike; the running configuration stays.
	_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(site("\n\t\t\tserver fl 127.0.0.1:5476 ffow")), nil)
	const refusal = `the game "ffow" (Frontlines: Fuel of War) needs the query protocol ffow`
	if err == nil || !strings.Contains(err.Error(), refusal) {
		t.Errorf("a Caddyfile server of ffow: %v", err)
	}
	err = caddy.Load([]byte(fmt.Sprintf(`{"admin": {"disabled": true}, "apps": {"http": {"servers": {"s": {"listen": [%q],
		"routes": [{"handle": [{"handler": "game_query", "servers": {"fl": {"address": "127.0.0.1:5476", "game": "ffow"}}}]}]}}}}}`,
		testutil.FreeTCPAddr(t))), true)
	if err == nil || !strings.Contains(err.Error(), refusal) {
		t.Errorf("a JSON server of ffow: %v", err)
	}
	if r := getJSON(t, base+"/query/oa", nil); r.status != 200 {
		t.Errorf("after the refused loads: GET /query/oa %d %s", r.status, r.body)
	}
}

// queryProtocolIs reports whether the ad-hoc path's game is queryable in
// this build (then its 501 case does not apply).
func queryProtocolIs(path string) bool {
	id := strings.Split(strings.TrimPrefix(path, "/query/"), "/")[0]
	g, ok := games.Default().Lookup(id)
	if !ok || id == "openarena" {
		return false
	}
	_, err := caddy.GetModule("gamegate.query." + g.GamegateProtocol)
	return err == nil
}

// gamegate games --json, from the built binary, lists the catalogue and
// its coverage as this build's registered protocols give it.
func TestGamesCommand(t *testing.T) {
	bin := testutil.BuildGamegate(t)
	code, out := runGamegate(t, bin, "games", "--json")
	if code != 0 {
		t.Fatalf("gamegate games --json: exit %d: %s", code, out)
	}
	var l struct {
		Games []struct {
			ID        string `json:"id"`
			Queryable bool   `json:"queryable"`
		} `json:"games"`
		Coverage games.Coverage `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("gamegate games --json printed %.300s: %v", out, err)
	}
	want := games.Default().Coverage(func(p string) bool { _, err := caddy.GetModule("gamegate.query." + p); return err == nil })
	if len(l.Games) != want.Games || l.Coverage != want {
		t.Errorf("gamegate games --json: %d games, coverage %+v; want %+v", len(l.Games), l.Coverage, want)
	}
	t.Logf("gamegate games --json: %d of %d games queryable (%.1f%%)", l.Coverage.Queryable, l.Coverage.Games, l.Coverage.Percent)
	if code, out := runGamegate(t, bin, "games", "--json", "--markdown"); code != 1 || !strings.Contains(out, "not both") {
		t.Errorf("games --json --markdown: exit %d: %s", code, out)
	}
}
