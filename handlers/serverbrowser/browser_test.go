package serverbrowser

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/handlers/serverlist"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wire "github.com/gamegate/gamegate/wire/master"
)

const hostile = `<script>alert(1)</script><b>"&'x`

func register(t *testing.T, m *master.Master, src, info string) {
	t.Helper()
	p := []dgram.Protocol{m}
	a := netip.MustParseAddrPort(src)
	out, _ := dgram.Dispatch(p, a, wire.AppendHeartbeat(nil, "QuakeArena-1"))
	if len(out) != 1 {
		t.Fatalf("heartbeat: %v", out)
	}
	c, _ := wire.DecodeGetInfo(out[0].Data)
	dgram.Dispatch(p, a, wire.AppendInfoResponse(nil, []byte(info+`\protocol\71\challenge\`+string(c))))
}

func newBrowser(t *testing.T, clock *testutil.Clock) *Browser {
	t.Helper()
	return newBrowserQuerying(t, clock, func(string) (*query.Status, error) { return nil, errors.New("no answer") })
}

// newBrowserQuerying is newBrowser with the statuses status answers.
func newBrowserQuerying(t *testing.T, clock *testutil.Clock, status func(addr string) (*query.Status, error)) *Browser {
	t.Helper()
	reg := master.NewRegistry(clock.Now)
	m, err := master.New(master.Config{Registry: reg, Now: clock.Now, HeartbeatRate: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	register(t, m, "127.0.0.1:1", `\hostname\`+hostile+`\mapname\oa_dm1\clients\3\sv_maxclients\8`)
	register(t, m, "10.0.0.1:2", `\hostname\Private\mapname\oa_dm1\clients\1\sv_maxclients\8`)
	statuses, err := serverlist.NewStatuses(func(_ context.Context, addr string) (*query.Status, error) {
		return status(addr)
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(statuses.Close)
	list, err := serverlist.New(serverlist.Config{Registry: reg, Statuses: statuses, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(list.Close)
	b, err := New(Config{List: list, Now: clock.Now, Title: `<i>LAN</i>`})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func get(b *Browser, from, target string, h ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = from
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, req)
	return w
}

func TestBadge(t *testing.T) {
	for _, tc := range []struct {
		name  string
		badge Badge
		want  []string
	}{
		{"up", Badge{Name: "Red Arena", Players: 3, MaxPlayers: 8, Up: true}, []string{">Red Arena<", ">3/8<", "#2e8b57"}},
		{"down", Badge{Name: "Red Arena"}, []string{">down<", "#c0392b"}},
		{"hostile", Badge{Name: hostile + "\x00\x1b", Up: true}, []string{"&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;&#34;&amp;&#39;x<"}},
		{"long", Badge{Name: strings.Repeat("n", 100), Up: true}, []string{strings.Repeat("n", maxBadgeName) + "…<"}},
		{"no name", Badge{Up: true}, []string{">server<"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(tc.badge.AppendSVG(nil))
			for _, w := range tc.want {
				if !strings.Contains(svg, w) {
					t.Errorf("got %s, want it to contain %s", svg, w)
				}
			}
			// Well-formed XML, whatever the name: an element <script>
			// or <b> would be one more start element than the seven of a badge.
			d := xml.NewDecoder(strings.NewReader(svg))
			elements := 0
			for {
				tok, err := d.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("%s: %v", svg, err)
					}
					break
				}
				if _, ok := tok.(xml.StartElement); ok {
					elements++
				}
			}
			if elements != 7 {
				t.Fatalf("got %d elements, want 7: %s", elements, svg)
			}
		})
	}
}

func TestBrowserAnswers(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	b := newBrowser(t, clock)

	w := get(b, "127.0.0.1:9", "/")
	csp := w.Header().Get("Content-Security-Policy")
	if w.Code != 200 || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'sha256-") || strings.Contains(csp, "unsafe") {
		t.Fatalf("page: %d, CSP %q", w.Code, csp)
	}
	if body := w.Body.String(); !strings.Contains(body, "<title>&lt;i&gt;LAN&lt;/i&gt;</title>") || strings.Contains(body, "innerHTML") || strings.Contains(body, "http://") && !strings.Contains(body, `"http://www.w3.org/2000/svg"`) {
		t.Fatal("the page has an unescaped title, uses innerHTML or refers elsewhere")
	}
	if w := get(b, "127.0.0.1:9", "/", "If-None-Match", w.Header().Get("ETag")); w.Code != http.StatusNotModified {
		t.Fatalf("page with its ETag: %d", w.Code)
	}

	w = get(b, "127.0.0.1:9", "/servers.json?not_empty=1")
	var page struct{ Total int }
	if err := json.Unmarshal(w.Body.Bytes(), &page); w.Code != 200 || err != nil || page.Total != 2 {
		t.Fatalf("servers.json: %d %s", w.Code, w.Body)
	}

	w = get(b, "127.0.0.1:9", "/badge/127.0.0.1:1.svg")
	if w.Code != 200 || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.Contains(w.Header().Get("Cache-Control"), "max-age=30") ||
		!strings.Contains(w.Body.String(), ">3/8<") || strings.Contains(w.Body.String(), "<script>") {
		t.Fatalf("badge: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if w2 := get(b, "127.0.0.1:9", "/badge/127.0.0.1:1.svg", "If-None-Match", w.Header().Get("ETag")); w2.Code != http.StatusNotModified {
		t.Fatalf("badge with its ETag: %d", w2.Code)
	}
	for _, target := range []string{"/badge/127.0.0.1:7.svg", "/badge/nonsense.svg", "/badge/10.0.0.1:2.svg", "/elsewhere"} {
		from := "203.0.113.9:9" // a public client may not see the private server
		if w := get(b, from, target); w.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", target, w.Code)
		}
	}

	// History: the server's sample is its players now; public clients see
	// no private or loopback server.
	w = get(b, "127.0.0.1:9", "/history.json")
	var h HistoryPage
	if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil || h.Bucket != 900 || len(h.Servers["127.0.0.1:1"]) != DefaultHistorySamples || h.Servers["127.0.0.1:1"][DefaultHistorySamples-1] != 3 {
		t.Fatalf("history.json: %s", w.Body)
	}
	if w2 := get(b, "127.0.0.1:9", "/history.json", "If-None-Match", w.Header().Get("ETag")); w2.Code != http.StatusNotModified {
		t.Fatalf("history.json with its ETag: %d", w2.Code)
	}
	if w := get(b, "203.0.113.9:9", "/history.json"); !strings.Contains(w.Body.String(), `"servers":{}`) {
		t.Fatalf("history.json to a public client: %s", w.Body)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Refresh: duration.Duration(time.Millisecond)}, "refresh"},
		{Config{History: duration.Duration(30 * 24 * time.Hour)}, "history"},
		{Config{HistorySamples: 1}, "history_samples"},
		{Config{MaxHistoryServers: -1}, "max_history_servers"},
		{Config{Title: strings.Repeat("t", MaxTitle+1)}, "title"},
		{Config{History: duration.Duration(time.Minute), HistorySamples: 120}, "history_samples"},
		{Config{Sizes: serverlist.Sizes{MaxStatusSize: 64 << 10, MaxPageSize: 32 << 10}}, "max_page_size"},
		{Config{Source: serverlist.Source{GameQuery: "eu west"}}, "game_query"},
		{Config{Source: serverlist.Source{Master: "a\x01"}}, "master"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m", 90 * time.Second: "1m30s", 168 * time.Hour: "168h"} {
		if got := shortDuration(d); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// Requests for the history or a badge, however many and from whom, make
// no status query: the sampler reads what the list holds on its own
// schedule, which queries nothing either. A status the list's requests
// loaded is what it samples.
func TestHistoryAndBadgesQueryNothing(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	var queries atomic.Int32
	live := &query.Status{Name: "Live", NumPlayers: 5, MaxPlayers: 8, Raw: map[string]any{}}
	live.SetAddress("127.0.0.1:1", 0)
	b := newBrowserQuerying(t, clock, func(addr string) (*query.Status, error) {
		queries.Add(1)
		if addr == "127.0.0.1:1" {
			return live, nil
		}
		return nil, errors.New("no answer")
	})
	for i := range 50 {
		clock.Advance(11 * time.Second) // past any ttl and gap between samples
		for _, target := range []string{"/history.json", "/badge/127.0.0.1:1.svg", "/badge/10.0.0.1:2.svg"} {
			if w := get(b, "127.0.0.1:9", target); w.Code != 200 {
				t.Fatalf("request %d of %s: %d", i, target, w.Code)
			}
		}
		b.sample() // as its ticker does
	}
	if n := queries.Load(); n != 0 {
		t.Fatalf("%d status queries for history, badges and samples, want none", n)
	}
	// The list's own requests query; the sample then holds the status.
	testutil.WaitFor(t, "the list to show the live status", func() bool {
		return strings.Contains(get(b, "127.0.0.1:9", "/servers.json").Body.String(), `"name":"Live"`)
	})
	b.sample()
	samples, _, _, ok := b.history.Samples(clock.Now(), "127.0.0.1:1", nil)
	if !ok || samples[len(samples)-1] != 5 {
		t.Fatalf("samples %v, want the live 5 players last", samples)
	}
	if w := get(b, "127.0.0.1:9", "/badge/127.0.0.1:1.svg"); !strings.Contains(w.Body.String(), ">5/8<") {
		t.Fatalf("badge after the list's query: %s", w.Body)
	}
}

// maxPageWeight bounds the page as served: its HTML, with its style and
// script inline, is everything a browser fetches before the list.
const maxPageWeight = 50 << 10

// The page weighs under maxPageWeight, and its inline style and script are
// exactly those the CSP's hashes allow (a browser would refuse the others).
func TestPageWeightAndHashes(t *testing.T) {
	b := newBrowser(t, testutil.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)))
	w := get(b, "127.0.0.1:9", "/")
	page, csp := w.Body.String(), w.Header().Get("Content-Security-Policy")
	t.Logf("the page: %d bytes (index.html %d, browser.css %d, browser.js %d)", len(page), len(pageHTML), len(pageCSS), len(pageJS))
	if len(page) >= maxPageWeight {
		t.Errorf("the page weighs %d bytes, want under %d", len(page), maxPageWeight)
	}
	inline := func(open, end string) string {
		_, rest, ok := strings.Cut(page, open)
		body, _, ok2 := strings.Cut(rest, end)
		if !ok || !ok2 {
			t.Fatalf("no %s…%s in the page", open, end)
		}
		return body
	}
	for directive, body := range map[string]string{"script-src": inline("<script>", "</script>"), "style-src": inline("<style>", "</style>")} {
		if want := directive + " " + cspHash(body) + ";"; !strings.Contains(csp, want) {
			t.Errorf("the CSP %q does not allow the page's inline %s (%s)", csp, directive, want)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d script elements, want the one", n)
	}
}
