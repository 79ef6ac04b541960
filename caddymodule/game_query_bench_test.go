package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// provisionedGameQuery is a game_query handler with one A2S server, a canned
// game server on loopback, whose status has been loaded once: every request
// after that is a cached hit.
func provisionedGameQuery(b *testing.B) *caddyquery.GameQuery {
	srv := a2sserver.Start(b, a2sserver.Config{InfoChallenge: true,
		Info: wirea2s.Info{Protocol: 17, Name: []byte("bench"), Map: []byte("de_dust2"), Folder: []byte("csgo"),
			Game: []byte("Counter-Strike 2"), AppID: 730, Players: 2, MaxPlayers: 16, ServerType: 'd',
			Environment: 'l', Version: []byte("1.0")},
		Players: wirea2s.Players{Players: []wirea2s.Player{
			{Name: []byte("alice"), Score: 3, Duration: 60}, {Index: 1, Name: []byte("bob"), Score: 1, Duration: 30}}},
	})
	h := &caddyquery.GameQuery{
		Servers: map[string]*caddyquery.GameQueryServer{"cs2": {ServerOptions: query.ServerOptions{Address: srv.Addr},
			ProtocolRaw: json.RawMessage(`{"protocol":"a2s"}`)}},
		Options: query.Options{TTL: map[string]duration.Duration{"status": duration.Duration(24 * time.Hour)}},
	}
	if err := h.Provision(loadedContext(b)); err != nil {
		b.Fatal(err)
	}
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/cs2", nil), nil); err != nil || w.Code != 200 {
		b.Fatalf("loading the status: %d %v %s", w.Code, err, w.Body)
	}
	return h
}

// BenchmarkCachedHit measures a cached A2S status through the game_query
// handler beside the discovery handler's 200, its baseline in the same run
// (bench/gamequery.sh compares the two through a real Caddy and wrk): the
// ratio of their ns/op is the handler's share of that comparison.
func BenchmarkCachedHit(b *testing.B) {
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	b.Run("discovery", func(b *testing.B) {
		h := provisionedDiscovery(b)
		r := httptest.NewRequest(http.MethodGet, "/v1/fleets/f/servers", nil)
		w := &discardWriter{h: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			if err := h.ServeHTTP(w, r, next); err != nil || w.status != 200 {
				b.Fatalf("got %d (%v), want 200", w.status, err)
			}
		}
	})
	b.Run("a2s_status", func(b *testing.B) {
		h := provisionedGameQuery(b)
		r := httptest.NewRequest(http.MethodGet, "/cs2", nil)
		w := &discardWriter{h: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			w.status = 0
			if err := h.ServeHTTP(w, r, next); err != nil || w.status != 200 {
				b.Fatalf("got %d (%v), want 200", w.status, err)
			}
		}
		if got := w.h["X-Gamegate-Cache"]; len(got) != 1 || got[0] != "hit" {
			b.Fatalf("X-Gamegate-Cache %q, want hit", got)
		}
	})
}
