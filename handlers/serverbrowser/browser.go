// Package serverbrowser serves a server-browser page: the list of game
// servers a master knows (from a serverlist.List, the same statuses the
// server_list handler serves), sortable, filterable and refreshing, with
// each server's player count over the last day and an SVG status badge
// per server. The page is one embedded HTML file with its CSS and script
// inline: it fetches nothing from elsewhere. It is free of Caddy.
package serverbrowser

import (
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/serverlist"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
)

// Defaults of Config.
const (
	DefaultTitle             = "Game servers"
	DefaultRefresh           = 30 * time.Second
	DefaultHistory           = 24 * time.Hour
	DefaultHistorySamples    = 96
	DefaultMaxHistoryServers = 1024
)

// Bounds Validate checks.
const (
	MinRefresh        = time.Second
	MaxRefresh        = time.Hour
	MinHistory        = time.Minute
	MaxHistory        = 7 * 24 * time.Hour
	MinHistorySamples = 2
	MaxHistorySamples = 1440
	MaxTitle          = 200
)

// Config is the behaviour of a Browser, and the options of the
// server_browser module, which embeds it: the JSON keys and the names in
// Validate's errors are the options'. Zero values mean the defaults.
type Config struct {
	// master, game_query: the lists the servers are read from, as
	// server_list's (ListConfig).
	serverlist.Source
	// The page's title. Default: Game servers.
	Title string `json:"title,omitempty"`
	// How often the page fetches the list again, from 1s to 1h.
	// Default: 30s.
	Refresh duration.Duration `json:"refresh,omitempty"`
	// The time each server's player-count chart spans, from 1m to 168h.
	// Default: 24h.
	History duration.Duration `json:"history,omitempty"`
	// The number of points (buckets) of the chart, each the peak of its
	// share of history, from 2 to 1440. Default: 96.
	HistorySamples int `json:"history_samples,omitempty"`
	// The servers whose history is kept; a server beyond it is listed
	// without a chart until one silent for the whole history is
	// forgotten. Default: 1024.
	MaxHistoryServers int `json:"max_history_servers,omitempty"`
	// max_status_size and max_page_size bound servers.json's answers as
	// server_list's (ListConfig).
	serverlist.Sizes

	// List gives the servers and their statuses, built from ListConfig.
	// Required.
	List *serverlist.List `json:"-"`
	// Now gives the time. Default: time.Now.
	Now func() time.Time `json:"-"`
}

// ListConfig returns the options of the list the page shows: its source
// and sizes.
func (c Config) ListConfig() serverlist.Config {
	return serverlist.Config{Source: c.Source, Sizes: c.Sizes}
}

// Validate checks the options' ranges; zero values (the defaults) pass.
// The names are the options'.
func (c Config) Validate() error {
	if err := c.Source.Validate(); err != nil {
		return err
	}
	if len(c.Title) > MaxTitle {
		return fmt.Errorf("title must be at most %d bytes, not %d", MaxTitle, len(c.Title))
	}
	if err := bounds.First(
		bounds.Duration("refresh", c.Refresh.Std(), MinRefresh, MaxRefresh),
		bounds.Duration("history", c.History.Std(), MinHistory, MaxHistory),
		bounds.Int("history_samples", c.HistorySamples, MinHistorySamples, MaxHistorySamples),
	); err != nil {
		return err
	}
	if h := c.History.Std(); h != 0 && c.HistorySamples != 0 && h/time.Duration(c.HistorySamples) < time.Second {
		return fmt.Errorf("history_samples must leave each of history's buckets at least 1s: %s / %d is less", h, c.HistorySamples)
	}
	if err := bounds.Int("max_history_servers", c.MaxHistoryServers, 1, master.MaxMaxServers); err != nil {
		return err
	}
	return c.Sizes.Validate()
}

// Browser serves the page, the list as JSON, the history and the badges.
type Browser struct {
	cfg     Config
	history *History
	bucket  time.Duration
	page    []byte
	pageTag string
	csp     string

	cancel context.CancelFunc
	done   chan struct{}
}

var (
	//go:embed page/index.html
	pageHTML string
	//go:embed page/browser.css
	pageCSS string
	//go:embed page/browser.js
	pageJS string
)

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// New returns a Browser with cfg, sampling the list's player counts into
// its history until Close.
func New(cfg Config) (*Browser, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.List == nil {
		return nil, fmt.Errorf("no server list")
	}
	if cfg.Title == "" {
		cfg.Title = DefaultTitle
	}
	cfg.Refresh = cmp.Or(cfg.Refresh, duration.Duration(DefaultRefresh))
	cfg.History = cmp.Or(cfg.History, duration.Duration(DefaultHistory))
	cfg.HistorySamples = cmp.Or(cfg.HistorySamples, DefaultHistorySamples)
	cfg.MaxHistoryServers = cmp.Or(cfg.MaxHistoryServers, DefaultMaxHistoryServers)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Browser{cfg: cfg, bucket: max(cfg.History.Std()/time.Duration(cfg.HistorySamples), time.Second)}
	b.history = NewHistory(b.bucket, cfg.HistorySamples, cfg.MaxHistoryServers)
	page := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString(cfg.Title),
		"{{REFRESH}}", strconv.Itoa(int(cfg.Refresh.Std()/time.Second)),
		"{{HISTORY}}", html.EscapeString(shortDuration(cfg.History.Std())),
		"{{CSS}}", pageCSS,
		"{{JS}}", pageJS,
	).Replace(pageHTML)
	b.page = []byte(page)
	b.pageTag = cache.ETag(b.page, false)
	b.csp = "default-src 'none'; script-src " + cspHash(pageJS) + "; style-src " + cspHash(pageCSS) +
		"; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	b.sample()
	go b.sampleEvery(ctx, min(b.bucket/3, sampleEvery))
	return b, nil
}

// sampleEvery is how often, at most, the history samples the list: a
// sample reads what the list holds and queries nothing, so it may be
// frequent (a bucket keeps its peak).
const sampleEvery = 10 * time.Second

// shortDuration is d as a person writes it: 24h, not 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Close stops the sampling.
func (b *Browser) Close() {
	b.cancel()
	<-b.done
}

func (b *Browser) sampleEvery(ctx context.Context, every time.Duration) {
	defer close(b.done)
	t := time.NewTicker(max(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.sample()
		}
	}
}

// sample records every listed server's player count from what the list
// holds (List.Cached): sampling starts no status query, and requests do
// not sample.
func (b *Browser) sample() {
	now := b.cfg.Now()
	for _, s := range b.cfg.List.Cached(netip.IPv6Loopback()) { // every server
		st := s.Status
		b.history.Record(now, st.Address, st.Name, st.NumPlayers, st.MaxPlayers)
	}
	b.history.Prune(now)
}

// ServeHTTP answers, at paths relative to where the browser is mounted
// (handle_path /browser/*): / the page, /servers.json the list (the
// server_list handler's answer, with its query parameters),
// /history.json the player counts, /badge/<address>.svg a server's
// badge. Any other path gets 404.
func (b *Browser) ServeHTTP(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	client := b.cfg.List.Client(r) // as the list decides it (trusted proxies)
	p := r.URL.Path
	switch {
	case p == "/" || p == "" || p == "/index.html":
		h := w.Header()
		h.Set("Content-Security-Policy", b.csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		return serveBody(w, r, "text/html; charset=utf-8", "no-cache", b.page, b.pageTag)
	case p == "/servers.json":
		return b.cfg.List.ServeHTTP(w, r)
	case p == "/history.json":
		return b.serveHistory(w, r, client)
	case strings.HasPrefix(p, "/badge/") && strings.HasSuffix(p, ".svg"):
		return b.serveBadge(w, r, client, strings.TrimSuffix(strings.TrimPrefix(p, "/badge/"), ".svg"))
	}
	http.NotFound(w, r)
	return http.StatusNotFound
}

// serveBody answers with body and its ETag, or 304.
func serveBody(w http.ResponseWriter, r *http.Request, contentType, cacheControl string, body []byte, etag string) int {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", cacheControl)
	if cache.IfNoneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
	return http.StatusOK
}

// HistoryPage is the answer of /history.json: for each server (by its
// address), its player counts over the window ending at End, oldest
// first, one per bucket of Bucket seconds, -1 where none was sampled.
type HistoryPage struct {
	Bucket  int64            `json:"bucket"`
	End     int64            `json:"end"`
	Servers map[string][]int `json:"servers"`
}

func (b *Browser) serveHistory(w http.ResponseWriter, r *http.Request, client netip.Addr) int {
	now := b.cfg.Now()
	page := HistoryPage{Bucket: int64(b.bucket / time.Second), End: (now.UnixNano()/int64(b.bucket) + 1) * int64(b.bucket/time.Second), Servers: map[string][]int{}}
	for _, s := range b.history.Servers(nil) {
		ap, err := netip.ParseAddrPort(s)
		if err != nil || !master.Visible(ap.Addr(), client) {
			continue
		}
		if samples, _, _, ok := b.history.Samples(now, s, nil); ok {
			page.Servers[s] = samples
		}
	}
	body, err := json.Marshal(page)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	return serveBody(w, r, "application/json", "no-cache", body, cache.ETag(body, false))
}

// serveBadge answers with the badge of the server at address: up with its
// players while it is listed (from what the list holds: a badge starts no
// status query), down while its history still holds it, 404 otherwise
// (and for a server the client may not see).
func (b *Browser) serveBadge(w http.ResponseWriter, r *http.Request, client netip.Addr, address string) int {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !master.Visible(ap.Addr(), client) {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	id := ap.String()
	var badge Badge
	found := false
	for _, s := range b.cfg.List.Cached(client) {
		if s.Status.Address == id {
			badge, found = Badge{Name: s.Status.Name, Players: s.Status.NumPlayers, MaxPlayers: s.Status.MaxPlayers, Up: true}, true
			break
		}
	}
	if !found {
		_, name, _, ok := b.history.Samples(b.cfg.Now(), id, nil)
		if !ok {
			http.NotFound(w, r)
			return http.StatusNotFound
		}
		badge = Badge{Name: name}
	}
	body := badge.AppendSVG(nil)
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	maxAge := strconv.Itoa(int(b.cfg.Refresh.Std() / time.Second))
	return serveBody(w, r, "image/svg+xml", "public, max-age="+maxAge, body, cache.ETag(body, false))
}
