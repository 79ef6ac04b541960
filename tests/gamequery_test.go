package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/gqp"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// countingGQP is a GQP server on a loopback socket (the project's own server
// engine) that counts the query datagrams it receives.
type countingGQP struct {
	addr    string
	queries atomic.Int64
}

func startCountingGQP(t *testing.T, answer func(q []byte) [][]byte) *countingGQP {
	t.Helper()
	s := &countingGQP{}
	s.addr = testutil.ServeUDP(t, func(_ netip.AddrPort, q []byte) [][]byte {
		s.queries.Add(1)
		return answer(q)
	}).String()
	return s
}

func engineAnswer(t *testing.T) func([]byte) [][]byte {
	s, err := gqp.NewServer(gqp.ServerConfig{
		Identity: gqp.Identity{GameName: "coalesce", GameVer: "1.0", NetVer: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddrPort("127.0.0.1:1")
	return func(q []byte) [][]byte {
		out, _ := s.Answer(context.Background(), src, q)
		return out
	}
}

type gameQueryEnv struct {
	base     string
	caddy    *testcaddy.Caddy
	upstream *httptest.Server
	gqpAddr  string
}

func startGameQuery(t *testing.T, extraServers string, extraOptions string) *gameQueryEnv {
	t.Helper()
	env := &gameQueryEnv{}
	// The HTTP upstream a GQP command is mapped to (a game's own web API).
	env.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"hostname": "Test Arena", "map": "dm-deck16", "numplayers": 2, "maxplayers": 16,
			"players": [{"name": "alice", "score": 3}, {"name": "bob"}], "bots": [{"name": "rob0t"}], "gameport": 7777, "args": %q}`, strings.Join(r.URL.Query()["arg"], ","))
	}))
	t.Cleanup(env.upstream.Close)
	env.gqpAddr = testutil.FreeUDPAddr(t)
	httpAddr := testutil.FreeTCPAddr(t)
	env.base = "http://" + httpAddr
	t.Setenv("GAMEGATE_TEST_GQP_PASSWORD", "hunter2")
	env.caddy = testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			@gqp gqp
			route @gqp {
				gqp {
					identify ut 432 400
					command status {
						url %s/status
					}
					command motd {
						record message "welcome"
						record rules "no camping"
					}
					command kick {
						record kicked "yes"
						protected
						min_args 1
					}
					login admin {env.GAMEGATE_TEST_GQP_PASSWORD}
				}
			}
		}
	}
}
http://%s {
	handle_path /query/* {
		game_query {
			server demo %s gqp {
				timeout 500ms
				status_command status
			}
			%s
			query_timeout 2s
			rate_limit 1000
			%s
		}
	}
}
`, env.gqpAddr, env.upstream.URL, httpAddr, env.gqpAddr, extraServers, extraOptions))
	return env
}

func getJSON(t *testing.T, url string, into any) response {
	t.Helper()
	r := request(t, "GET", url)
	if into != nil && r.status < 300 {
		if err := json.Unmarshal([]byte(r.body), into); err != nil {
			t.Fatalf("%s: %v in %s", url, err, r.body)
		}
	}
	return r
}

func TestGameQueryThroughGQP(t *testing.T) {
	env := startGameQuery(t, "", "commands demo identify echo motd no-such-command kick challenge")
	q := env.base + "/query/demo"

	var id gqp.ReplyJSON
	if r := getJSON(t, q+"/identify", &id); r.status != 200 || len(id.Records) != 3 || id.Records[0].Name != "gamename" || *id.Records[0].Value != "ut" {
		t.Fatalf("identify: got %d %s", r.status, r.body)
	}
	var echo gqp.ReplyJSON
	if r := getJSON(t, q+"/echo?arg=one&arg=two+words&arg=three", &echo); r.status != 200 || len(echo.Records) != 3 || *echo.Records[1].Value != "two words" {
		t.Fatalf("echo with several arguments: got %d %s", r.status, r.body)
	}
	if r := getJSON(t, q+"/no-such-command", nil); r.status != 404 || !strings.Contains(r.body, "unknown command") || !strings.Contains(r.body, `"protocol_status":20`) {
		t.Fatalf("unknown command: got %d %s, want 404 with the server's text", r.status, r.body)
	}

	// The normalised status: identify plus the status command, which the
	// responder answers from its HTTP upstream.
	var st struct {
		Name       string `json:"name"`
		Map        string `json:"map"`
		Version    string `json:"version"`
		NumPlayers int    `json:"numplayers"`
		MaxPlayers int    `json:"maxplayers"`
		Players    []struct {
			Name string `json:"name"`
		} `json:"players"`
		Bots []struct {
			Name string `json:"name"`
		} `json:"bots"`
		Connect  string `json:"connect"`
		Protocol string `json:"protocol"`
	}
	host, _, _ := net.SplitHostPort(env.gqpAddr)
	if r := getJSON(t, q, &st); r.status != 200 || st.Name != "Test Arena" || st.Map != "dm-deck16" || st.NumPlayers != 2 || st.MaxPlayers != 16 ||
		len(st.Players) != 2 || st.Players[0].Name != "alice" || st.Version != "432" || st.Protocol != "gqp" ||
		len(st.Bots) != 1 || st.Bots[0].Name != "rob0t" || st.Connect != net.JoinHostPort(host, "7777") {
		t.Fatalf("status: got %d %s", r.status, r.body)
	}

	// A protected command, listed: the server answers 32 (each query comes
	// from a fresh port, so a validation could never carry over to it).
	if r := getJSON(t, q+"/kick?arg=bob", nil); r.status != 403 || !strings.Contains(r.body, `"protocol_status":32`) {
		t.Fatalf("protected command: got %d %s", r.status, r.body)
	}
	var ch gqp.ReplyJSON
	if r := getJSON(t, q+"/challenge?arg=admin&arg=hunter2", &ch); r.status != 200 || len(ch.Records) != 1 {
		t.Fatalf("challenge, listed: got %d %s", r.status, r.body)
	}
	// validate is not listed: the gateway refuses it without asking.
	if r := getJSON(t, q+"/validate?arg="+*ch.Records[0].Value, nil); r.status != 403 || strings.Contains(r.body, "protocol_status") {
		t.Fatalf("validate, not listed: got %d %s, want the gateway's 403", r.status, r.body)
	}

	// A batch of servers × commands.
	req, _ := http.NewRequest("POST", env.base+"/query/", strings.NewReader(`{"servers": ["demo"], "commands": ["identify", "motd", {"name": "echo", "args": ["x"]}, "nope"]}`))
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var batch struct {
		Results []struct {
			Server, Command string
			Status          int
			Body            json.RawMessage
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&batch); err != nil || resp.StatusCode != 200 || len(batch.Results) != 4 {
		t.Fatalf("batch: got %d %+v (%v)", resp.StatusCode, batch, err)
	}
	wantStatus := map[string]int{"identify": 200, "motd": 200, "echo": 200, "nope": 403} // nope is not allowed
	for _, r := range batch.Results {
		if r.Status != wantStatus[r.Command] || r.Server != "demo" {
			t.Fatalf("batch result %s: got %d %s, want %d", r.Command, r.Status, r.Body, wantStatus[r.Command])
		}
	}
	if !strings.Contains(string(batch.Results[1].Body), "no camping") {
		t.Fatalf("batch motd: got %s", batch.Results[1].Body)
	}

	// ETag and 304.
	first := request(t, "GET", q+"/identify")
	etag := first.header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag on a result")
	}
	if r := request(t, "GET", q+"/identify", "If-None-Match", etag); r.status != 304 {
		t.Fatalf("If-None-Match: got %d, want 304", r.status)
	}
}

// 200 concurrent requests for one uncached answer cause one upstream query.
// The answer is cached for an hour, so however slowly a loaded machine runs
// the 200 requests, none can find it expired and rightly ask again (expiry
// and refreshes are tested with a controlled clock in handlers/query).
func TestGameQueryCoalesces(t *testing.T) {
	up := startCountingGQP(t, engineAnswer(t))
	env := startGameQuery(t, fmt.Sprintf("server counted %s gqp", up.addr), "ttl identify 1h")
	url := env.base + "/query/counted/identify"
	upstreamBefore := env.caddy.MustMetric(t, `gamegate_game_query_upstream_queries_total{server="counted"}`)
	const n = 200
	var wg sync.WaitGroup
	var ok atomic.Int64
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := httpClient.Get(url)
			if err != nil {
				return
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				ok.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != n {
		t.Fatalf("%d of %d requests succeeded", ok.Load(), n)
	}
	if got := env.caddy.MustMetric(t, `gamegate_game_query_upstream_queries_total{server="counted"}`) - upstreamBefore; got != 1 {
		t.Fatalf("%d concurrent requests: gamegate_game_query_upstream_queries_total rose by %v, want 1", n, got)
	}
	// One query is one datagram, or two if the client's one retry (after a
	// second without an answer) fired on a loaded machine.
	if got := up.queries.Load(); got < 1 || got > 2 {
		t.Fatalf("%d concurrent requests caused %d upstream datagrams, want 1 (2 with a retry)", n, got)
	}
}

func TestGameQueryBadUpstreams(t *testing.T) {
	garbage := startCountingGQP(t, func([]byte) [][]byte { return [][]byte{[]byte("\x00\x01garbage\xff")} })
	tooMuch := startCountingGQP(t, func([]byte) [][]byte {
		// A response that starts well and never ends: 84 KB, past the
		// client's 64 KiB bound, without an EOT.
		out := make([][]byte, 60)
		for i := range out {
			out[i] = []byte(strings.Repeat("x", 1400))
		}
		out[0] = append([]byte("10identify\x1e\x11"), out[0][13:]...)
		return out
	})
	half := startCountingGQP(t, func([]byte) [][]byte { return [][]byte{[]byte("10identify\x1e\x12gamename\x1fu")} })
	silent := startCountingGQP(t, func([]byte) [][]byte { return nil })
	servers := ""
	for name, s := range map[string]*countingGQP{"garbage": garbage, "toomuch": tooMuch, "half": half, "silent": silent} {
		servers += fmt.Sprintf("server %s %s gqp {\n\t\t\t\ttimeout 300ms\n\t\t\t\tretries -1\n\t\t\t}\n\t\t\t", name, s.addr)
	}
	outside := testutil.DialUDP(t, "127.0.0.3:0", "127.0.0.1:9") // a listener outside allow_targets
	env := startGameQuery(t, servers, "ad_hoc gqp {\n\t\t\t\ttimeout 300ms\n\t\t\t}\n\t\t\tallow_targets 127.0.0.2/32")
	for _, tc := range []struct {
		server string
		want   int
		why    string // the words the error must contain
	}{
		{"garbage", 502, "does not start like a GQP response"},
		{"toomuch", 502, "too long"},
		{"half", 502, "ended before its EOT"},
		{"silent", 504, "did not answer in time"},
	} {
		start := time.Now()
		r := request(t, "GET", env.base+"/query/"+tc.server+"/identify")
		if r.status != tc.want || !strings.Contains(r.body, tc.why) {
			t.Fatalf("%s: got %d %s, want %d saying %q", tc.server, r.status, r.body, tc.want, tc.why)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s: took %v", tc.server, d)
		}
		t.Logf("%s upstream: %d in %v: %s", tc.server, r.status, time.Since(start).Round(time.Millisecond), r.body)
	}
	target := outside.Conn.LocalAddr().String()
	if r := request(t, "GET", env.base+"/query/"+target+"/identify"); r.status != 403 {
		t.Fatalf("target outside allow_targets: got %d %s, want 403", r.status, r.body)
	}
	if b, ok := outside.Recv(300 * time.Millisecond); ok {
		t.Fatalf("a datagram reached the target outside allow_targets: %q", b)
	}
	if r := request(t, "GET", env.base+"/query/10.1.2.3:7777/identify"); r.status != 403 {
		t.Fatalf("10.1.2.3 outside allow_targets: got %d", r.status)
	}
}

// The GQP → HTTP direction: a GQP client asks the responder, which answers
// from a JSON upstream.
func TestGQPResponderAnswersFromJSONUpstream(t *testing.T) {
	env := startGameQuery(t, "", "")
	c := &gqp.Client{Timeout: time.Second}
	q := new(wiregqp.Query)
	q.Add([]byte("identify"))
	q.Add([]byte("status"), []byte("a1"), []byte("a2"))
	resp, err := c.Query(context.Background(), env.gqpAddr, q)
	if err != nil {
		t.Fatal(err)
	}
	st := gqp.ToJSON(&resp.Replies[1])
	got := map[string]string{}
	var players []string
	for _, r := range st.Records {
		if r.Value != nil {
			got[r.Name] = *r.Value
		}
		if r.Name == "players" {
			players = r.Items
		}
	}
	if st.Status != 10 || got["hostname"] != "Test Arena" || got["numplayers"] != "2" || got["args"] != "a1,a2" ||
		strings.Join(players, ",") != "alice,bob" {
		t.Fatalf("status from the JSON upstream: got %+v", st)
	}
}

// startQueryGate starts a Caddy with one site, serving game_query with the
// options in gameQuery under /query/, and returns the site's base URL.
func startQueryGate(t *testing.T, gameQuery string) string {
	t.Helper()
	httpAddr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`{
	admin off
}
http://%s {
	handle_path /query/* {
		game_query {%s
		}
	}
}
`, httpAddr, gameQuery))
	return "http://" + httpAddr
}
