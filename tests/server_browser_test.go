package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	wireq3 "github.com/gamegate/gamegate/wire/quake3"
)

const chromiumPath = "/usr/bin/chromium"

// chromium runs headless Chromium with args and url and returns what it
// printed; it fails the test when Chromium is missing on CI and skips it
// elsewhere.
func chromium(t *testing.T, url string, args ...string) string {
	t.Helper()
	requireChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, chromiumPath, append(args, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v: %s", url, err, stderr.String())
	}
	return string(out)
}

// requireChromium fails the test when Chromium is missing on CI and skips
// it elsewhere.
func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: run scripts/peers (it installs Debian's chromium)", chromiumPath)
		}
		t.Skipf("%s is missing, so the page is not tested in a browser: run scripts/peers (it installs Debian's chromium)", chromiumPath)
	}
}

// renderedPage dumps the DOM of the server-browser page at url once its
// first list has loaded. Chromium's virtual time runs on while the page's
// fetch of the list waits for a busy machine, so a dump can be taken before
// the first answer is rendered: the page then still says "Loading…", and
// the page is loaded again, a bounded number of times.
func renderedPage(t *testing.T, url string) string {
	t.Helper()
	const attempts = 5
	for i := 1; ; i++ {
		dom := chromium(t, url, "--dump-dom")
		if !strings.Contains(dom, ">Loading…</p>") {
			return dom
		}
		if i == attempts {
			t.Fatalf("the page still says Loading… after %d loads:\n%s", attempts, dom)
		}
		t.Logf("load %d of %s was dumped before its list arrived; loading it again", i, url)
	}
}

// artifactsDir is where a test keeps what a person may want to look at:
// $GAMEGATE_TEST_ARTIFACTS, else the test's temporary directory.
func artifactsDir(t *testing.T) string {
	if dir := os.Getenv("GAMEGATE_TEST_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// The server-browser page in a real browser: a real OpenArena server with
// bots registered through its heartbeat and a server whose name is
// markup are both shown, the name as text; the page honours a filter in
// its query string; each server has its chart; the badge shows the
// server's players. A screenshot is kept.
func TestServerBrowserInChromium(t *testing.T) {
	gate, udp, web := startMasterSite(t, `handle_path /browser/* {
	server_browser {
		title "LAN servers"
		refresh 2s
	}
}`)
	registered := gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`)
	oa := testutil.StartOpenArenaWithMaster(t, udp, "^2Browser ^7Arena", 8, "Grism", "Sarge")
	testutil.WaitFor(t, "the OpenArena server to register", func() bool {
		return gate.MustMetric(t, `gamegate_master_datagrams_total{verdict="registered"}`) > registered
	})
	const hostile = `<script>document.title='pwned'</script><b id="injected">bold</b>`
	fake := fakeServer(t, udp, "127.0.0.5", `\hostname\`+hostile+`\mapname\q3dm17\clients\0\sv_maxclients\16\protocol\71`)
	fakeAddr := fake.Conn.LocalAddr().String()

	base := "http://" + web + "/browser/"
	var p struct {
		Total   int
		Servers []struct {
			Address string
			Bots    []struct{ Name string }
		}
	}
	testutil.WaitFor(t, "both servers, and the OpenArena server's bots, to be listed", func() bool {
		if r := getJSON(t, base+"servers.json", &p); r.status != 200 {
			t.Fatalf("GET servers.json: %d %s", r.status, r.body)
		}
		for _, s := range p.Servers {
			if s.Address == oa.Addr && len(s.Bots) == 2 {
				return p.Total == 2
			}
		}
		return false
	})

	// The history samples on its own schedule (every 10s at most), not
	// when asked: wait for its sample of the OpenArena server.
	testutil.WaitForWithin(t, 30*time.Second, "a sample of the OpenArena server's players", func() bool {
		var h struct{ Servers map[string][]int }
		if r := getJSON(t, base+"history.json", &h); r.status != 200 {
			t.Fatalf("GET history.json: %d %s", r.status, r.body)
		}
		s := h.Servers[oa.Addr]
		return len(s) > 0 && s[len(s)-1] == 2
	})

	rows := func(dom string) []string {
		var out []string
		for _, part := range strings.Split(dom, `<tr class="server`)[1:] {
			out = append(out, part[:strings.Index(part, "</tr>")])
		}
		return out
	}
	row := func(rows []string, addr string) string {
		for _, r := range rows {
			if strings.Contains(r, `data-address="`+addr+`"`) {
				return r
			}
		}
		return ""
	}

	dom := renderedPage(t, base)
	all := rows(dom)
	t.Logf("rendered %d rows:\n%s", len(all), strings.Join(all, "\n"))
	if len(all) != 2 {
		t.Fatalf("the page shows %d servers, want 2:\n%s", len(all), dom)
	}
	oaRow, fakeRow := row(all, oa.Addr), row(all, fakeAddr)
	for what, ok := range map[string]bool{
		"the OpenArena server's name":        strings.Contains(oaRow, ">Browser Arena<"),
		"its map":                            strings.Contains(oaRow, ">"+oa.Map+"<"),
		"its players (two bots) of its max":  strings.Contains(oaRow, ">2/8<"),
		"its game":                           strings.Contains(oaRow, ">OpenArena<"),
		"its chart with a sample":            strings.Contains(oaRow, "<polyline"),
		"the markup name, as text":           strings.Contains(fakeRow, "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;b id=\"injected\"&gt;bold&lt;/b&gt;"),
		"the empty server's players":         strings.Contains(fakeRow, ">0/16<"),
		"no element from a server's name":    !strings.Contains(dom, `<b id="injected">`),
		"no script run from a server's name": strings.Contains(dom, "<title>LAN servers</title>"),
		"the count":                          strings.Contains(dom, "2 of 2 servers, 2 players"),
	} {
		if !ok {
			t.Errorf("the page does not show %s:\n%s", what, dom)
		}
	}

	// The filter in the query string: only the server with players.
	dom = renderedPage(t, base+"?not_empty=1")
	filtered := rows(dom)
	if len(filtered) != 1 || row(filtered, oa.Addr) == "" || !strings.Contains(dom, "1 of 2 servers") {
		t.Fatalf("?not_empty=1 shows %d rows, want the OpenArena server's alone:\n%s", len(filtered), dom)
	}
	shot := filepath.Join(artifactsDir(t), "server-browser.png")
	chromium(t, base, "--screenshot="+shot, "--window-size=1200,800", "--hide-scrollbars")
	info, err := os.Stat(shot)
	if err != nil || info.Size() < 10000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, info.Size())

	// The badge sites embed.
	r := request(t, "GET", base+"badge/"+oa.Addr+".svg")
	if r.status != 200 || !strings.Contains(r.body, ">Browser Arena<") || !strings.Contains(r.body, ">2/8<") {
		t.Fatalf("badge: %d %s", r.status, r.body)
	}
	if r := request(t, "GET", base+"badge/"+fakeAddr+".svg"); r.status != 200 || strings.Contains(r.body, "<script") || strings.Contains(r.body, "<b ") {
		t.Fatalf("badge of the markup name: %d %s", r.status, r.body)
	}
	if r := request(t, "GET", base+"badge/127.0.0.1:1.svg"); r.status != http.StatusNotFound {
		t.Fatalf("badge of an unknown server: %d, want 404", r.status)
	}
}

// Anonymous requests for the browser's history and badges make no status
// query of a game server, however many: the history samples what the
// list holds on its own schedule. A server is queried once when it joins
// the list, and then as the list's own requests ask.
func TestServerBrowserHistoryQueriesNothing(t *testing.T) {
	_, udp, web := startMasterSite(t, `handle_path /browser/* {
	server_browser {
		history 1m
		history_samples 6
	}
}`)
	s := startHostileServer(t, udp, "127.0.0.6")
	t.Cleanup(s.stop)
	base := "http://" + web + "/browser/"
	// The history holds the status's player count (256; its heartbeat
	// says 1) once the first query, made when the server joined, has
	// ended: an attempt answered late on a loaded machine is followed by
	// another, so the count of queries is read then, not assumed to be 1.
	// The list queries a server that joined within its tend period (10s),
	// and the history samples every 3.3s: a minute leaves a loaded
	// machine room.
	testutil.WaitForWithin(t, time.Minute, "the server's first query, when it joined", func() bool {
		var h struct{ Servers map[string][]int }
		getJSON(t, base+"history.json", &h)
		return slices.Contains(h.Servers[s.addr], wireq3.MaxPlayers)
	})
	joined := s.statuses.Load()
	if joined < 1 {
		t.Fatalf("the history holds the status of a server never queried")
	}
	// Over twelve seconds: past the list's ttl (10s), when a list request
	// would refresh the status, and past two samples of the history
	// (every 3.3s). The former sampling on request queried at most once
	// a second.
	for deadline := time.Now().Add(12 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r := request(t, "GET", base+"history.json"); r.status != 200 {
			t.Fatalf("history.json: %d", r.status)
		}
		if r := request(t, "GET", base+"badge/"+s.addr+".svg"); r.status != 200 {
			t.Fatalf("badge: %d", r.status)
		}
	}
	if n := s.statuses.Load(); n != joined {
		t.Fatalf("%d status queries, want the %d when it joined: history and badge requests made some", n, joined)
	}
	if r := request(t, "GET", base+"servers.json"); r.status != 200 {
		t.Fatalf("servers.json: %d", r.status)
	}
	testutil.WaitFor(t, "the list's own refresh", func() bool { return s.statuses.Load() > joined })
}

// The page shows a list longer than one answer of servers.json: with
// max_page_size 16KiB, each answer holds one or two of eight hostile
// servers' statuses (cut to max_status_size) and the page follows the
// answers' pages to show all eight.
func TestServerBrowserFollowsPages(t *testing.T) {
	const servers, maxPage, maxEntry = 8, 16 << 10, 8 << 10
	_, udp, web := startMasterSite(t, `handle_path /browser/* {
	server_browser {
		refresh 2s
		max_page_size 16KiB
	}
}`)
	for i := range servers {
		s := startHostileServer(t, udp, fmt.Sprintf("127.0.7.%d", i+1))
		t.Cleanup(s.stop)
	}
	base := "http://" + web + "/browser/"
	var pages int
	testutil.WaitForWithin(t, 30*time.Second, "every hostile server's status", func() bool {
		var all []listEntry
		all, pages = listAll(t, base+"servers.json", maxPage, maxEntry)
		n := 0
		for _, s := range all {
			if s.NumPlayers == 256 && s.Truncated {
				n++
			}
		}
		return n == servers
	})
	if pages < servers/2 {
		t.Fatalf("%d servers in %d answers of at most %d bytes", servers, pages, maxPage)
	}
	dom := renderedPage(t, base)
	if rows := strings.Count(dom, `<tr class="server`); rows != servers || !strings.Contains(dom, fmt.Sprintf("%d of %d servers", servers, servers)) {
		t.Fatalf("the page shows %d servers, want %d (from %d answers):\n%s", rows, servers, pages, dom)
	}
}
