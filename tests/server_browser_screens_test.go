package tests

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

var updateScreenshots = flag.Bool("update-screenshots", false,
	"TestServerBrowserOnEveryScreen writes the server_browser page's screenshots into docs/handlers/img")

// screenshotsDir is where the docs page of server_browser finds its
// screenshots.
const screenshotsDir = "../docs/handlers/img"

// maxScreenshotSize bounds each screenshot kept in the docs.
const maxScreenshotSize = 150 << 10

// browserView is what tests/peers/server-browser.js is asked to look at:
// the page at URL in a window of Width×Height, and what to do there.
type browserView struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	ColorScheme string `json:"colorScheme,omitempty"`
	Open        string `json:"open,omitempty"`   // the address of the row to open
	Reopen      bool   `json:"reopen,omitempty"` // load the opened row's URL again
	Copy        string `json:"copy,omitempty"`   // the address whose copy control to press
	Axe         bool   `json:"axe,omitempty"`
	Screenshot  string `json:"screenshot,omitempty"`
	Fixture     any    `json:"fixture,omitempty"` // servers.json's answer instead of the list's
}

type pageWidth struct{ ScrollWidth, InnerWidth int }

// browserResult is what the script saw in a view.
type browserResult struct {
	Name           string
	Errors         []string
	Overflow       pageWidth
	OpenedOverflow *pageWidth
	Status         string
	Background     string
	Regions        []string
	Empty          struct {
		Shown bool
		Text  string
		Clear bool
	}
	Rows []struct {
		Address, Name, Expanded, Game, Players, Ping, Connect, Badge string
		Join                                                         *string
		Copy                                                         bool
		NameIsLink                                                   bool
	}
	Opened *struct {
		Expanded, Hash, Text   string
		Bots, Players, Columns []string
		BotTags, ChartTitles   int
		ChartLabels, Reopened  []string
	}
	Copied string
	Axe    []struct {
		ID, Impact, Help string
		Nodes            int
		Targets          []string
	}
	CSP []string
}

// browse runs tests/peers/server-browser.js (playwright-core driving
// Debian's chromium) over views.
func browse(t *testing.T, views ...browserView) []browserResult {
	t.Helper()
	requireChromium(t)
	if _, err := exec.LookPath("node"); err != nil && os.Getenv("CI") != "" {
		t.Fatal("node is missing: the page is driven by playwright-core from tests/peers (scripts/peers)")
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		t.Logf("%s %s", pkg, testutil.NpmVersion(t, pkg)) // fails, naming scripts/peers, when missing
	}
	arg, err := json.Marshal(map[string]any{"chromium": chromiumPath, "views": views})
	if err != nil {
		t.Fatal(err)
	}
	out := testutil.RunNode(t, 4*time.Minute, "server-browser.js", string(arg))
	var res []browserResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(views) {
		t.Fatalf("server-browser.js printed %s: %v", out, err)
	}
	return res
}

// checkScreen holds what every view of the page must be: no horizontal
// scrolling (the page no wider than the window, an opened row included),
// no script error, nothing the CSP blocked, and no serious or critical
// accessibility violation where axe-core ran.
func checkScreen(t *testing.T, r browserResult) {
	t.Helper()
	t.Logf("%s: scrollWidth %d, innerWidth %d; opened: %+v; background %s; axe: %+v",
		r.Name, r.Overflow.ScrollWidth, r.Overflow.InnerWidth, r.OpenedOverflow, r.Background, r.Axe)
	for _, w := range []*pageWidth{&r.Overflow, r.OpenedOverflow} {
		if w != nil && (w.InnerWidth == 0 || w.ScrollWidth > w.InnerWidth) {
			t.Errorf("%s: the page is %d px wide in a window of %d: it scrolls sideways", r.Name, w.ScrollWidth, w.InnerWidth)
		}
	}
	if len(r.Errors) > 0 || len(r.CSP) > 0 {
		t.Errorf("%s: script errors %q, blocked by the CSP %q", r.Name, r.Errors, r.CSP)
	}
	for _, v := range r.Axe {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("%s: axe-core: %s (%s) on %d elements: %s %q", r.Name, v.ID, v.Impact, v.Nodes, v.Help, v.Targets)
		}
	}
	for _, row := range r.Rows {
		if (row.Join == nil) == !row.Copy {
			t.Errorf("%s: row %s has join %v and copy %v: want one of them", r.Name, row.Address, row.Join, row.Copy)
		}
		if row.Badge != "badge/"+strings.ReplaceAll(row.Address, ":", "%3A")+".svg" || row.NameIsLink {
			t.Errorf("%s: row %s: badge link %q, name or address a link: %v", r.Name, row.Address, row.Badge, row.NameIsLink)
		}
	}
}

// The server-browser page as players meet it, in Chromium at a phone's
// width (390×844) and a desktop's (1280×900), light and dark: two real
// OpenArena servers with bots, one registered with the master and one
// configured in game_query with a region. At both widths the page does
// not scroll sideways, each server has a join or copy control, its name
// opens (by the keyboard) a row listing its bots, marked, with its map,
// version and chart, the game's name is the list's, ?q=zzz shows the empty
// state, the dark scheme changes the background, and axe-core finds no
// serious or critical violation. With -update-screenshots it writes the
// docs' screenshots:
//
//	go test ./tests -run TestServerBrowserOnEveryScreen -count=1 -args -update-screenshots
func TestServerBrowserOnEveryScreen(t *testing.T) {
	udp, web := testutil.FreeUDPAddr(t), testutil.FreeTCPAddr(t)
	config := func(gameQuery string) string {
		return gateConfig{UDP: udp, Protocols: "master", Web: web, Site: `handle_path /game/* {
	game_query {
		ttl status 1h` + gameQuery + `
	}
}
handle_path /browser/* {
	server_browser {
		title "Game servers"
		refresh 2s
	}
}`}.String()
	}
	gate := testcaddy.Start(t, config(""))
	registered := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`)
	oa := testutil.StartOpenArenaWithMaster(t, udp, "^2Browser ^7Arena", 8, "Grism", "Sarge")
	eu := testutil.StartOpenArena(t, "^4Euro ^7Frag", 12, "Major")
	testutil.WaitFor(t, "the OpenArena server to register", func() bool {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`) > registered
	})
	gate.Load(t, config(fmt.Sprintf("\n\t\tserver euro %s quake3\n\t\tregion euro eu-west", eu.Addr)))

	base := "http://" + web + "/browser/"
	var p listedPage
	testutil.WaitFor(t, "both servers and their bots to be listed", func() bool {
		if r := getJSON(t, base+"servers.json", &p); r.status != 200 {
			t.Fatalf("GET servers.json: %d %s", r.status, r.body)
		}
		bots := 0
		for _, s := range p.Servers {
			bots += len(s.Bots)
		}
		return len(p.Servers) == 2 && bots == 3
	})
	games := map[string]string{}
	for _, s := range p.Servers {
		games[s.Address] = s.Game
	}
	testutil.WaitForWithin(t, 30*time.Second, "a sample of the OpenArena server's players", func() bool {
		var h struct{ Servers map[string][]int }
		getJSON(t, base+"history.json", &h)
		s := h.Servers[oa.Addr]
		return len(s) > 0 && s[len(s)-1] == 2
	})

	dir, err := filepath.Abs(screenshotsDir) // the script runs in tests/peers
	if err != nil {
		t.Fatal(err)
	}
	if !*updateScreenshots {
		dir = artifactsDir(t)
	}
	shot := func(name string) string { return filepath.Join(dir, "server_browser-"+name+".png") }
	views := []browserView{
		{Name: "390", URL: base, Width: 390, Height: 844, Open: oa.Addr, Reopen: true, Copy: oa.Addr, Axe: true, Screenshot: shot("390")},
		{Name: "1280", URL: base, Width: 1280, Height: 900, Open: oa.Addr, Copy: eu.Addr, Axe: true, Screenshot: shot("1280")},
		{Name: "390-dark", URL: base, Width: 390, Height: 844, ColorScheme: "dark", Open: oa.Addr, Axe: true, Screenshot: shot("390-dark")},
		{Name: "1280-dark", URL: base, Width: 1280, Height: 900, ColorScheme: "dark", Axe: true},
		{Name: "390-empty", URL: base + "?q=zzz", Width: 390, Height: 844, Axe: true},
		{Name: "1280-empty", URL: base + "?q=zzz", Width: 1280, Height: 900},
	}
	res := browse(t, views...)
	byName := map[string]browserResult{}
	for _, r := range res {
		checkScreen(t, r)
		byName[r.Name] = r
	}
	for _, name := range []string{"390", "1280", "390-dark", "1280-dark"} {
		r := byName[name]
		if len(r.Rows) != 2 || !strings.Contains(r.Status, "2 of 2 servers, 3 players") {
			t.Errorf("%s: %d rows (%q), want both servers", name, len(r.Rows), r.Status)
		}
		for _, row := range r.Rows {
			if row.Game != games[row.Address] || row.Game == "" {
				t.Errorf("%s: row %s shows game %q, the list names %q", name, row.Address, row.Game, games[row.Address])
			}
			if row.Join != nil || !row.Copy || row.Connect != row.Address {
				t.Errorf("%s: row %s: join %v, copy %v of %q; want a copy of its address (no join link for quake3)", name, row.Address, row.Join, row.Copy, row.Connect)
			}
			want := map[string]string{oa.Addr: "Browser Arena", eu.Addr: "Euro Frag"}[row.Address]
			if row.Name != want || !strings.Contains(row.Ping, " ms") {
				t.Errorf("%s: row %s named %q, ping %q; want %q and a ping", name, row.Address, row.Name, row.Ping, want)
			}
		}
		if !slices.Contains(r.Regions, "eu-west") {
			t.Errorf("%s: the region filter offers %q, want eu-west", name, r.Regions)
		}
	}
	for _, name := range []string{"390", "1280", "390-dark"} {
		o := byName[name].Opened
		if o == nil {
			t.Fatalf("%s: no row opened", name)
		}
		if o.Expanded != "true" || !slices.Equal(o.Bots, []string{"Grism", "Sarge"}) || o.BotTags != 2 || len(o.Players) != 0 {
			t.Errorf("%s: the opened row: expanded %s, bots %q (%d marked), players %q; want Grism and Sarge marked as bots", name, o.Expanded, o.Bots, o.BotTags, o.Players)
		}
		for _, want := range []string{oa.Map, "ioq3", "Players 2/8 (2 bots)", "Peak 2 players"} {
			if !strings.Contains(o.Text, want) {
				t.Errorf("%s: the opened row does not show %q:\n%s", name, want, o.Text)
			}
		}
		if !slices.Contains(o.ChartLabels, "now") || !slices.Contains(o.ChartLabels, "−24 h") || o.ChartTitles != 96 {
			t.Errorf("%s: the chart's labels %q and %d values on hover; want −24 h … now, and 96", name, o.ChartLabels, o.ChartTitles)
		}
	}
	if o := byName["390"].Opened; o.Hash != "#server="+strings.ReplaceAll(oa.Addr, ":", "%3A") || !slices.Equal(o.Reopened, []string{"Browser Arena"}) {
		t.Errorf("the opened row's URL: %q opens %q", o.Hash, o.Reopened)
	}
	if c := byName["390"].Copied; c != oa.Addr {
		t.Errorf("the copy control at 390 px copied %q, want %s", c, oa.Addr)
	}
	if c := byName["1280"].Copied; c != eu.Addr {
		t.Errorf("the copy control at 1280 px copied %q, want %s", c, eu.Addr)
	}
	for _, w := range []string{"390", "1280"} {
		light, dark := byName[w].Background, byName[w+"-dark"].Background
		if light == "" || light == dark {
			t.Errorf("%s: background %q light, %q dark: the dark scheme is not applied", w, light, dark)
		}
		e := byName[w+"-empty"]
		if len(e.Rows) != 0 || !e.Empty.Shown || e.Empty.Text != "No servers match “zzz”." || !e.Empty.Clear {
			t.Errorf("%s ?q=zzz: %d rows, empty state %+v", w, len(e.Rows), e.Empty)
		}
	}
	for _, name := range []string{"390", "1280", "390-dark"} {
		info, err := os.Stat(shot(name))
		if err != nil || info.Size() < 10<<10 || info.Size() > maxScreenshotSize {
			t.Errorf("screenshot %s: %v, want 10 KiB to %d KiB", shot(name), err, maxScreenshotSize>>10)
			continue
		}
		t.Logf("screenshot %s: %d bytes", shot(name), info.Size())
	}
}

// The page renders what list entries may carry beyond a Quake 3 server's
// status, fed to it in Chromium in place of servers.json: a join URL (a
// link, where the entry has one; a script URL is not one, and gets the
// copy control), people with score and time beside bots, a ping of 0
// (shown) apart from an unknown one (-1 or none: "—"), the game name as
// given, a name too long for a phone that must wrap, a map, game,
// version, player and rule as long and unbroken, which widen neither the
// page nor an opened row, a #server= link that is no valid escape, which
// opens nothing and stops nothing, and a list with no server at all (its
// own empty state, with no filter to clear).
func TestServerBrowserListEntriesInChromium(t *testing.T) {
	_, _, web := startMasterSite(t, `handle_path /browser/* {
	server_browser
}`)
	base := "http://" + web + "/browser/"
	entry := func(addr, name string, fields map[string]any) map[string]any {
		e := map[string]any{"name": name, "map": "de_dust2", "password": false, "numplayers": 0, "maxplayers": 16,
			"players": []any{}, "bots": []any{}, "connect": addr, "queryPort": 27015, "ping": 0, "version": "1.40",
			"raw": map[string]any{}, "protocol": "a2s", "address": addr, "game": "", "region": ""}
		for k, v := range fields {
			if v == nil {
				delete(e, k)
				continue
			}
			e[k] = v
		}
		return e
	}
	long := strings.Repeat("W", 200)
	list := map[string]any{"total": 3, "offset": 0, "limit": 1000, "servers": []any{
		entry("127.0.0.1:27015", "Source Arena", map[string]any{"game": "Counter-Strike 2", "join": "steam://connect/127.0.0.1:27015",
			"numplayers": 3, "region": "eu-west",
			"players": []any{map[string]any{"name": "alice", "raw": map[string]any{"score": 12, "time": 754.2}},
				map[string]any{"name": "bob", "raw": map[string]any{"score": 3, "time": 30}}},
			"bots": []any{map[string]any{"name": "Bot Kim", "raw": map[string]any{"score": 0, "time": 3600}}}}),
		// A URL the list never makes (an allowed scheme only by a block
		// list of script schemes) gets the copy control.
		entry("127.0.0.1:27016", "Script Join", map[string]any{"game": "OpenArena", "join": "ms-msdt:/id PCWDiagnostic", "ping": -1}),
		// What a hostile server may say, unbroken: no field may widen the
		// page (a filter's options included).
		entry("127.0.0.1:27017", long, map[string]any{"ping": nil, "map": strings.Repeat("M", 120), "game": strings.Repeat("G", 120),
			"version": strings.Repeat("V", 120), "numplayers": 1, "players": []any{map[string]any{"name": strings.Repeat("P", 120), "raw": map[string]any{}}},
			"raw": map[string]any{strings.Repeat("K", 120): "x"}}),
	}}
	none := map[string]any{"total": 0, "offset": 0, "limit": 1000, "servers": []any{}}
	res := browse(t,
		browserView{Name: "390", URL: base, Width: 390, Height: 844, Fixture: list, Open: "127.0.0.1:27015", Axe: true},
		browserView{Name: "1280", URL: base, Width: 1280, Height: 900, Fixture: list, Open: "127.0.0.1:27015"},
		browserView{Name: "390-none", URL: base, Width: 390, Height: 844, Fixture: none, Axe: true},
		browserView{Name: "1280-none", URL: base, Width: 1280, Height: 900, Fixture: none},
		// A link whose #server= is no valid escape (a hand-edited or cut
		// URL) opens no row, and the page still loads.
		browserView{Name: "390-bad-hash", URL: base + "#server=%E0%A4%A", Width: 390, Height: 844, Fixture: list},
		browserView{Name: "390-long", URL: base, Width: 390, Height: 844, Fixture: list, Open: "127.0.0.1:27017"},
		browserView{Name: "1280-long", URL: base, Width: 1280, Height: 900, Fixture: list, Open: "127.0.0.1:27017"},
	)
	for _, r := range res {
		checkScreen(t, r)
	}
	for _, r := range res[:2] {
		if len(r.Rows) != 3 {
			t.Fatalf("%s: %d rows, want 3: %+v", r.Name, len(r.Rows), r.Rows)
		}
		script, source, unnamed := r.Rows[0], r.Rows[1], r.Rows[2] // by name, in lower case
		if source.Address != "127.0.0.1:27015" || unnamed.Name != long {
			t.Fatalf("%s: rows %+v", r.Name, r.Rows)
		}
		if source.Join == nil || *source.Join != "steam://connect/127.0.0.1:27015" || source.Copy || source.Game != "Counter-Strike 2" || source.Ping != "0 ms" {
			t.Errorf("%s: the entry with a join URL: %+v", r.Name, source)
		}
		if script.Join != nil || !script.Copy || script.Ping != "—" || unnamed.Ping != "—" {
			t.Errorf("%s: the script URL's entry %+v, the one without a ping %+v: want copy controls and —", r.Name, script, unnamed)
		}
		o := r.Opened
		if o == nil || !slices.Equal(o.Players, []string{"alice", "bob"}) || !slices.Equal(o.Bots, []string{"Bot Kim"}) || o.BotTags != 1 ||
			!slices.Equal(o.Columns, []string{"Name", "Score", "Time"}) || !strings.Contains(o.Text, "13 min") || !strings.Contains(o.Text, "eu-west") {
			t.Errorf("%s: the opened row %+v", r.Name, o)
		}
	}
	if r := res[4]; len(r.Rows) != 3 || r.Rows[1].Expanded != "false" {
		t.Errorf("%s: a malformed #server=: rows %+v, want 3 closed", r.Name, r.Rows)
	}
	for _, r := range res[2:4] {
		if len(r.Rows) != 0 || !r.Empty.Shown || !strings.HasPrefix(r.Empty.Text, "No servers are listed yet") || r.Empty.Clear {
			t.Errorf("%s: an empty list: %d rows, empty state %+v", r.Name, len(r.Rows), r.Empty)
		}
	}
}
