package tests

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

// A FiveM fixture (getinfo over UDP, info.json and players.json over HTTP
// on the same port) through game_query and GameDig, as gta5f and as RedM's
// rdr2r: both read it alike.
func TestFiveMAgainstGamedig(t *testing.T) {
	for _, id := range []string{"gta5f", "rdr2r"} {
		t.Run(id, func(t *testing.T) {
			s := testutil.ExampleFiveM()
			testutil.StartFiveM(t, s)
			st := fixtureCheck{protocol: "fivem", gameID: id, addr: s.Addr, known: map[string]gamedigKnown{
				"numplayers": {"type", "a string (clients as sent)"},
				"maxplayers": {"type", "a string (sv_maxclients as sent)"},
			}}.run(t)
			players, _ := st["players"].([]any)
			raw, _ := st["raw"].(map[string]any)
			if st["name"] != "Gate RP ★ Los Santos" || st["version"] != "1386442478" || len(players) != 2 || raw["info"] == nil {
				t.Errorf("gamegate read %v", st)
			}
			if n := s.HTTP.Hits.Load(); n < 2 {
				t.Errorf("the HTTP side was asked %d times, want info.json and players.json", n)
			}
		})
	}
}

// Through a real Caddy, FiveM's HTTP side keeps the rules of every query:
// a redirect (here to another loopback server) is answered as an unusable
// answer and not followed, and an info.json over max_response_size is
// refused; a players.json over it leaves the players out.
func TestFiveMHTTPRedirectAndSize(t *testing.T) {
	other := &testutil.HTTPGameServer{Routes: map[string][]byte{"/info.json": []byte(`{"version":1}`)}}
	testutil.StartHTTPGame(t, other)
	s := testutil.ExampleFiveM()
	testutil.StartFiveM(t, s)
	huge := `{"pad":"` + strings.Repeat("x", 8192) + `"}`
	var mode atomic.Int32
	s.HTTP.Handler = func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case 1:
			http.Redirect(w, r, "http://"+other.Addr+r.URL.Path, http.StatusFound)
		case 2:
			_, _ = w.Write([]byte(huge))
		case 3:
			if r.URL.Path == "/players.json" {
				_, _ = w.Write([]byte("[" + strings.Repeat(`{"name":"p","ping":1},`, 1000) + `{"name":"q"}]`))
				return
			}
			_, _ = w.Write([]byte(s.InfoJSON))
		}
	}
	gate := startQueryGate(t, `
			server fm `+s.Addr+` fivem {
				max_response_size 4KiB
			}
			default_ttl 1ms
			negative_ttl 1ms`)

	mode.Store(1)
	body := map[string]any{}
	if r := getJSON(t, gate+"/query/fm", &body); r.status != 502 || !strings.Contains(r.body, "bad_answer") || strings.Contains(r.body, other.Addr) {
		t.Errorf("a redirect: %d %s, want 502 bad_answer naming no address", r.status, r.body)
	}
	if n := other.Hits.Load(); n != 0 {
		t.Errorf("the redirect's target was asked %d times", n)
	}
	mode.Store(2)
	testutil.WaitFor(t, "a refused oversized info.json", func() bool {
		body = map[string]any{}
		r := getJSON(t, gate+"/query/fm", &body)
		return r.status == 502 && strings.Contains(r.body, "max_response_size")
	})
	mode.Store(3)
	testutil.WaitFor(t, "a status without the oversized players.json", func() bool {
		body = map[string]any{}
		r := getJSON(t, gate+"/query/fm", &body)
		players, _ := body["players"].([]any)
		raw, _ := body["raw"].(map[string]any)
		_, hasRaw := raw["players"]
		return r.status == 200 && len(players) == 0 && !hasRaw
	})
}

// Asked ad hoc by game ID, FiveM's HTTP requests go to the address the
// gateway checked against allow_targets; a server outside it is asked
// nothing, over UDP or HTTP.
func TestFiveMAdHocAllowTargets(t *testing.T) {
	inside := testutil.ExampleFiveM()
	testutil.StartFiveM(t, inside)
	gate := startQueryGate(t, `
			ad_hoc_games gta5f
			allow_targets 127.0.0.2/32 `+strings.Split(inside.Addr, ":")[0]+`/32`)
	var st map[string]any
	if r := getJSON(t, gate+"/query/gta5f/"+inside.Addr, &st); r.status != 200 || st["version"] != "1386442478" {
		t.Fatalf("inside allow_targets: %d %s", r.status, r.body)
	}
	if n := inside.HTTP.Hits.Load(); n != 2 {
		t.Errorf("the server's HTTP side was asked %d times, want 2", n)
	}
	outside := &testutil.HTTPGameServer{Addr: "127.0.0.3:0", Routes: map[string][]byte{"/info.json": []byte(inside.InfoJSON)}}
	testutil.StartHTTPGame(t, outside)
	var e map[string]any
	if r := getJSON(t, gate+"/query/gta5f/"+outside.Addr, &e); r.status != 403 {
		t.Errorf("outside allow_targets: %d %s, want 403", r.status, r.body)
	}
	if n := outside.Hits.Load(); n != 0 {
		t.Errorf("a server outside allow_targets was asked %d times over HTTP", n)
	}
}
