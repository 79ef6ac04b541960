package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// countingProtocol answers from fixed values and counts what it was asked.
type countingProtocol struct {
	calls atomic.Int32
	fail  atomic.Bool
	// hold, when set, keeps every Command waiting until it is closed.
	hold chan struct{}
}

func (p *countingProtocol) Name() string { return "test" }

func (p *countingProtocol) Status(_ context.Context, address string) (*Status, error) {
	p.calls.Add(1)
	if p.fail.Load() {
		return nil, Timeout(address)
	}
	return &Status{Name: "arena", Address: address, Protocol: "test", Players: []Player{}}, nil
}

func (p *countingProtocol) Command(_ context.Context, address, command string, args []string) (any, error) {
	p.calls.Add(1)
	if p.hold != nil {
		<-p.hold
	}
	switch {
	case p.fail.Load():
		return nil, Timeout(address)
	case command == "missing":
		return nil, &Error{HTTPStatus: http.StatusNotFound, Message: "unknown command", ProtocolStatus: 20}
	case command == "nan":
		return map[string]any{"tickets": math.NaN()}, nil
	case command == "chatty":
		return nil, Upstream(address, errors.New(strings.Repeat("é", 40000)))
	}
	return map[string]any{"command": command, "args": args}, nil
}

type rig struct {
	clock *testutil.Clock
	proto *countingProtocol
	gw    *Gateway
}

func newRig(t *testing.T, mutate func(*Config)) *rig {
	t.Helper()
	r := &rig{clock: testutil.NewClock(time.Unix(1_700_000_000, 0)), proto: new(countingProtocol)}
	cfg := Config{
		Servers: map[string]Server{"arena": {Name: "arena", Address: "192.0.2.1:27960", Protocol: r.proto,
			Commands: []string{"echo", "missing", "other", "a", "b", "c", "d", "nan", "chatty"}}},
		Options: Options{
			DefaultTTL:           duration.Duration(time.Second),
			StaleWhileRevalidate: duration.Duration(time.Millisecond), // past its lifetime, a result is refreshed first
			StaleIfError:         duration.Duration(time.Minute),
			NegativeTTL:          duration.Duration(time.Second),
		},
		Now: r.clock.Now,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	gw, err := NewGateway(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.gw = gw
	return r
}

func (r *rig) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	r.gw.ServeHTTP(w, req, req.URL.Path)
	return w
}

func TestRoutes(t *testing.T) {
	r := newRig(t, nil)
	tests := []struct {
		method, path string
		want         int
		contains     string
	}{
		{"GET", "/arena", 200, `"name":"arena"`},
		{"GET", "/arena/echo?arg=a&arg=b", 200, `"args":["a","b"]`},
		{"HEAD", "/arena/echo", 200, ""},
		{"GET", "/arena/missing", 404, `"protocol_status":20`},
		{"GET", "/nobody", 404, "no game server is named"},
		{"GET", "/192.0.2.9:7777", 403, "only named game servers"},
		{"GET", "/arena/a/b", 404, "want /{server}"},
		{"POST", "/arena", 405, "use GET or HEAD"},
		{"GET", "/", 405, "a batch is a POST"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			w := r.do(tt.method, tt.path, "")
			if w.Code != tt.want || !strings.Contains(w.Body.String(), tt.contains) {
				t.Fatalf("got %d %s, want %d containing %q", w.Code, w.Body, tt.want, tt.contains)
			}
		})
	}
}

func TestAdHocTargetsOnlyInsideAllowedNetworks(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
	})
	r.gw.cfg.AdHoc = r.proto
	if w := r.do("GET", "/198.51.100.1:7777", ""); w.Code != 403 || r.proto.calls.Load() != 0 {
		t.Fatalf("outside: got %d after %d protocol calls, want 403 and none", w.Code, r.proto.calls.Load())
	}
	if w := r.do("GET", "/192.0.2.77:7777", ""); w.Code != 200 || r.proto.calls.Load() != 1 {
		t.Fatalf("inside: got %d after %d calls, want 200 after 1", w.Code, r.proto.calls.Load())
	}
	if w := r.do("GET", "/192.0.2.77:0", ""); w.Code != 400 {
		t.Fatalf("port 0: got %d, want 400", w.Code)
	}
}

// A name that resolves outside allow_targets is answered as one that does
// not resolve: the gateway's resolver may see names (and addresses) its
// clients must not, and a distinct answer would tell which names exist.
func TestAdHocNameOutsideAllowedNetworksKeepsItsAddress(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
	})
	r.gw.cfg.AdHoc = r.proto
	outside := r.do("GET", "/localhost:7777", "")
	missing := r.do("GET", "/gamegate-test.invalid:7777", "")
	body := outside.Body.String()
	if outside.Code != 502 || r.proto.calls.Load() != 0 {
		t.Fatalf("got %d %s after %d protocol calls, want 502 and none", outside.Code, body, r.proto.calls.Load())
	}
	for _, addr := range []string{"127.0.0.1", "::1"} {
		if strings.Contains(body, addr) {
			t.Fatalf("got %s, which tells what the name resolves to (%s)", body, addr)
		}
	}
	// The same answer as a name that does not resolve, but for the name.
	same := strings.ReplaceAll(missing.Body.String(), "gamegate-test.invalid", "localhost")
	if missing.Code != outside.Code || same != body {
		t.Fatalf("a name outside allow_targets: %d %s; a name that does not resolve: %d %s; want the same answer",
			outside.Code, body, missing.Code, missing.Body.String())
	}
}

func TestCachingStaleAndConditional(t *testing.T) {
	r := newRig(t, nil)
	first := r.do("GET", "/arena/echo", "")
	etag := first.Header().Get("ETag")
	if first.Code != 200 || etag == "" || first.Header().Get("X-Gamegate-Cache") != "miss" {
		t.Fatalf("first: got %d ETag %q cache %q", first.Code, etag, first.Header().Get("X-Gamegate-Cache"))
	}
	if w := r.do("GET", "/arena/echo", "", "If-None-Match", etag); w.Code != 304 || w.Header().Get("X-Gamegate-Cache") != "hit" {
		t.Fatalf("If-None-Match: got %d (%s)", w.Code, w.Header().Get("X-Gamegate-Cache"))
	}
	if r.proto.calls.Load() != 1 {
		t.Fatalf("%d protocol calls, want 1", r.proto.calls.Load())
	}
	// The server stops answering: past the TTL the stale answer is served.
	r.proto.fail.Store(true)
	r.clock.Advance(2 * time.Second)
	w := r.do("GET", "/arena/echo", "")
	if w.Code != 200 || w.Header().Get("X-Gamegate-Cache") != "stale" || w.Header().Get("Age") != "2" {
		t.Fatalf("stale-if-error: got %d cache %q age %q", w.Code, w.Header().Get("X-Gamegate-Cache"), w.Header().Get("Age"))
	}
	// Without a stale answer, the failure is the answer: 504.
	if w := r.do("GET", "/arena/other", ""); w.Code != 504 || !strings.Contains(w.Body.String(), "did not answer") {
		t.Fatalf("no stale answer: got %d %s", w.Code, w.Body)
	}
}

// Requests for the same server and command that arrive while its query
// runs share that query: one upstream query, one answer, and every request
// but the one that started it says X-Gamegate-Cache: shared.
func TestConcurrentRequestsShareOneQuery(t *testing.T) {
	r := newRig(t, nil)
	r.proto.hold = make(chan struct{})
	const n = 8
	answers := make(chan *httptest.ResponseRecorder, n)
	for range n {
		go func() { answers <- r.do("GET", "/arena/echo?arg=x", "") }()
	}
	// Every request has found the query running (or started it) once it
	// counts as a miss; only then may the query end.
	testutil.WaitFor(t, "every request to wait for the query", func() bool { return r.gw.Stats().Misses == n })
	close(r.proto.hold)
	states := map[string]int{}
	var body, etag string
	for range n {
		w := <-answers
		if w.Code != 200 {
			t.Fatalf("got %d %s, want 200", w.Code, w.Body)
		}
		if body == "" {
			body, etag = w.Body.String(), w.Header().Get("ETag")
		}
		if w.Body.String() != body || w.Header().Get("ETag") != etag {
			t.Fatalf("answers differ: %s (ETag %s) and %s (ETag %s)", body, etag, w.Body, w.Header().Get("ETag"))
		}
		states[w.Header().Get("X-Gamegate-Cache")]++
	}
	if states["miss"] != 1 || states["shared"] != n-1 {
		t.Fatalf("X-Gamegate-Cache of %d concurrent requests: got %v, want 1 miss and %d shared", n, states, n-1)
	}
	if c := r.proto.calls.Load(); c != 1 {
		t.Fatalf("%d concurrent requests made %d upstream queries, want 1", n, c)
	}
}

func TestRateLimitPerServer(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UpstreamRate, c.UpstreamBurst = 1, 2 })
	codes := []int{}
	for _, cmd := range []string{"a", "b", "c"} {
		codes = append(codes, r.do("GET", "/arena/"+cmd, "").Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 503 || r.proto.calls.Load() != 2 {
		t.Fatalf("three distinct queries at a burst of 2: got %v after %d calls, want 200 200 503 after 2", codes, r.proto.calls.Load())
	}
	r.clock.Advance(time.Second)
	if w := r.do("GET", "/arena/d", ""); w.Code != 200 {
		t.Fatalf("after a second: got %d", w.Code)
	}
}

func TestBatch(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxBatch = 4 })
	w := r.do("POST", "/", `{"servers": ["arena", "nobody"], "commands": ["status", {"name": "echo", "args": ["x"]}]}`)
	var out struct {
		Results []struct {
			Server, Command string
			Status          int
		} `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 || len(out.Results) != 4 {
		t.Fatalf("batch: got %d %s (%v)", w.Code, w.Body, err)
	}
	want := map[string]int{"arena/status": 200, "arena/echo": 200, "nobody/status": 404, "nobody/echo": 404}
	for _, res := range out.Results {
		if want[res.Server+"/"+res.Command] != res.Status {
			t.Fatalf("%s/%s: got %d, want %d", res.Server, res.Command, res.Status, want[res.Server+"/"+res.Command])
		}
	}
	for body, code := range map[string]int{
		`{"servers": ["arena"], "commands": ["a", "b", "c", "d", "e"]}`: 413,
		`{"servers": [], "commands": ["a"]}`:                            400,
		`{"servers": ["arena"], "commands": [42]}`:                      400,
		`{"servers": ["arena"], "extra": 1}`:                            400,
		`not json`:                                                      400,
	} {
		if w := r.do("POST", "/", body); w.Code != code {
			t.Fatalf("batch %s: got %d, want %d", body, w.Code, code)
		}
	}
}

func TestHTTPStatusOfPlainErrors(t *testing.T) {
	if got := HTTPStatus(errors.New("x")); got != 500 {
		t.Fatalf("got %d, want 500", got)
	}
	if got := HTTPStatus(Upstream("a", errors.New("x"))); got != 502 {
		t.Fatalf("got %d, want 502", got)
	}
}

// readOnlyProtocol declares its read-only commands.
type readOnlyProtocol struct{ countingProtocol }

func (*readOnlyProtocol) ReadOnlyCommands() []string { return []string{"players"} }

func TestCommandAllowList(t *testing.T) {
	ro := new(readOnlyProtocol)
	r := newRig(t, func(c *Config) {
		c.Servers["ro"] = Server{Name: "ro", Address: "192.0.2.2:1", Protocol: ro}
		c.Servers["bare"] = Server{Name: "bare", Address: "192.0.2.3:1", Protocol: new(countingProtocol)}
		c.Servers["listed"] = Server{Name: "listed", Address: "192.0.2.4:1", Protocol: ro, Commands: []string{"kick"}}
	})
	for path, want := range map[string]int{
		"/ro":                 200, // status is always allowed
		"/ro/players":         200, // the protocol's read-only command
		"/ro/challenge?arg=x": 403,
		"/ro/kick?arg=x":      403,
		"/bare":               200,
		"/bare/players":       403, // a protocol without read-only commands: status only
		"/listed/kick?arg=x":  200, // the list replaces the protocol's defaults
		"/listed/players":     403,
	} {
		if w := r.do("GET", path, ""); w.Code != want {
			t.Errorf("%s: got %d %s, want %d", path, w.Code, w.Body, want)
		}
	}
	if n := ro.calls.Load(); n != 3 {
		t.Fatalf("the read-only protocol was asked %d times, want 3 (refused commands never reach it)", n)
	}
}

func TestArgumentsHaveTheirOwnBudgetAndCache(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UpstreamRate, c.UpstreamBurst, c.MaxEntries = 1, 2, 4 })
	flood := func() {
		t.Helper()
		codes := map[int]int{}
		for i := range 50 {
			codes[r.do("GET", "/arena/echo?arg="+strconv.Itoa(i), "").Code]++
		}
		if codes[503] == 0 {
			t.Fatalf("distinct arguments never hit the rate limit: %v", codes)
		}
	}
	if w := r.do("GET", "/arena", ""); w.Code != 200 {
		t.Fatalf("status: got %d", w.Code)
	}
	flood()
	// The status is still cached, not evicted by 50 distinct arguments ...
	if w := r.do("GET", "/arena", ""); w.Code != 200 || w.Header().Get("X-Gamegate-Cache") != "hit" {
		t.Fatalf("status after the flood: got %d (%s), want a 200 hit", w.Code, w.Header().Get("X-Gamegate-Cache"))
	}
	// ... and, once past its lifetime, refreshed from its own budget while
	// the arguments' budget is spent.
	r.clock.Advance(2 * time.Second)
	flood()
	if w := r.do("GET", "/arena", ""); w.Code != 200 || w.Header().Get("X-Gamegate-Cache") != "miss" {
		t.Fatalf("status refresh during the flood: got %d (%s), want a 200 miss", w.Code, w.Header().Get("X-Gamegate-Cache"))
	}
	if n := r.gw.plain.Len(); n != 1 {
		t.Fatalf("the status cache holds %d entries, want 1", n)
	}
}

func TestAdHocPerClientRateAndConcurrency(t *testing.T) {
	block := make(chan struct{})
	entered := make(chan struct{}, 8)
	slow := &blockingProtocol{entered: entered, release: block}
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
		c.AdHoc = slow
		c.AdHocRate, c.AdHocBurst, c.MaxAdHoc = 1, 3, 2
	})
	from := func(ip string) *http.Request {
		req := httptest.NewRequest("GET", "/192.0.2.9:1", nil)
		req.RemoteAddr = ip + ":5000"
		return req
	}
	// Two ad-hoc queries in flight fill the global bound: a third, from
	// another client, is refused at once.
	done := make(chan int, 2)
	for i := range 2 {
		go func() {
			w := httptest.NewRecorder()
			req := from("198.51.100.1")
			req.URL.Path = "/192.0.2." + strconv.Itoa(10+i) + ":1"
			r.gw.ServeHTTP(w, req, req.URL.Path)
			done <- w.Code
		}()
	}
	<-entered
	<-entered
	w := httptest.NewRecorder()
	r.gw.ServeHTTP(w, from("198.51.100.2"), "/192.0.2.9:1")
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("third concurrent ad-hoc query: got %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	close(block)
	for range 2 {
		if c := <-done; c != 200 {
			t.Fatalf("in-flight ad-hoc query: got %d", c)
		}
	}
	// Client 198.51.100.1 used 2 of its burst of 3: one more, then 429.
	codes := []int{}
	for range 3 {
		w := httptest.NewRecorder()
		r.gw.ServeHTTP(w, from("198.51.100.1"), "/192.0.2.9:1")
		codes = append(codes, w.Code)
		if w.Code == 429 && w.Header().Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if codes[0] != 200 || codes[1] != 429 || codes[2] != 429 {
		t.Fatalf("one client past its burst: got %v, want 200 429 429", codes)
	}
	// Named servers are not ad-hoc and not limited per client.
	if w := r.do("GET", "/arena", ""); w.Code != 200 {
		t.Fatalf("named server: got %d", w.Code)
	}
}

// blockingProtocol's queries wait until release is closed.
type blockingProtocol struct {
	countingProtocol
	entered chan struct{}
	release chan struct{}
}

func (p *blockingProtocol) Status(ctx context.Context, address string) (*Status, error) {
	p.entered <- struct{}{}
	<-p.release
	return p.countingProtocol.Status(ctx, address)
}

func TestErrorDetailIsLoggedNotSent(t *testing.T) {
	var logged []error
	r := newRig(t, func(c *Config) {
		c.Servers["down"] = Server{Name: "down", Address: "10.9.8.7:27960", Protocol: new(failingProtocol)}
		c.Log = func(_ string, err error) { logged = append(logged, err) }
	})
	w := r.do("GET", "/down", "")
	if w.Code != 502 || strings.Contains(w.Body.String(), "10.9.8.7") || strings.Contains(w.Body.String(), "refused") {
		t.Fatalf("got %d %s, want 502 in words without the address or the OS error", w.Code, w.Body)
	}
	if len(logged) != 1 || !strings.Contains(logged[0].Error(), "connection refused") {
		t.Fatalf("logged %v, want the OS error", logged)
	}
}

type failingProtocol struct{ countingProtocol }

func (*failingProtocol) Status(_ context.Context, address string) (*Status, error) {
	return nil, Unreachable(address, errors.New("read udp 10.0.0.1:4000->10.9.8.7:27960: recvfrom: connection refused"))
}

// adHocFrom is an ad-hoc request for target from the client at ip.
func (r *rig) adHocFrom(ip, target string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/"+target, nil)
	req.RemoteAddr = netip.AddrPortFrom(netip.MustParseAddr(ip), 5000).String()
	w := httptest.NewRecorder()
	r.gw.ServeHTTP(w, req, req.URL.Path)
	return w
}

// An attacker with many addresses fills the per-client ad-hoc table: a
// client that had spent its burst must stay limited (the table refuses the
// newcomers rather than forgetting the clients it holds).
func TestAdHocClientTableFullKeepsLimits(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
		c.AdHocRate, c.AdHocBurst, c.MaxEntries = 1, 2, 16
	})
	r.gw.cfg.AdHoc = r.proto
	codes := []int{}
	for range 3 {
		codes = append(codes, r.adHocFrom("198.51.100.1", "192.0.2.9:1").Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Fatalf("the victim's burst: got %v, want 200 200 429", codes)
	}
	refused := 0
	for i := range 200 {
		if w := r.adHocFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String(), "192.0.2.9:1"); w.Code == 429 {
			refused++
		}
	}
	if n := r.gw.clients.Len(); n > 16 {
		t.Errorf("the client table holds %d clients, want at most 16", n)
	}
	if refused == 0 {
		t.Error("200 new clients into a table of 16 were all admitted")
	}
	if w := r.adHocFrom("198.51.100.1", "192.0.2.9:1"); w.Code != 429 {
		t.Fatalf("the limited client after 200 others: got %d, want 429 (its limit was forgotten)", w.Code)
	}
}

// Ad-hoc targets, which clients choose, have budgets of their own: however
// many of them are queried, a named server's spent budget stays spent.
func TestAdHocTargetsCannotResetNamedBudgets(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
		c.UpstreamRate, c.UpstreamBurst, c.MaxEntries = 0.001, 1, 8
	})
	r.gw.cfg.AdHoc = r.proto
	if w := r.do("GET", "/arena", ""); w.Code != 200 {
		t.Fatalf("status: got %d", w.Code)
	}
	if w := r.do("GET", "/arena/a", ""); w.Code != 503 {
		t.Fatalf("past the named server's budget: got %d, want 503", w.Code)
	}
	for i := range 100 {
		// One client per target, so that no per-client limit stops the flood.
		r.adHocFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}).String(), "192.0.2."+strconv.Itoa(i+1)+":1")
	}
	if n := r.gw.adHocBudgets.Len(); n > 8 {
		t.Errorf("the ad-hoc budget table holds %d budgets, want at most 8", n)
	}
	before := r.proto.calls.Load()
	if w := r.do("GET", "/arena/b", ""); w.Code != 503 || r.proto.calls.Load() != before {
		t.Fatalf("the named server after 100 ad-hoc targets: got %d after %d more upstream queries, want 503 after none",
			w.Code, r.proto.calls.Load()-before)
	}
}

// An IPv6 client is its /64 (or the configured prefix): addresses of one
// prefix share one client's limit.
func TestAdHocIPv6ClientIsItsPrefix(t *testing.T) {
	for _, tc := range []struct {
		bits    int
		sibling string // same client as 2001:db8:1:2::1
		other   string // another client
	}{
		{0, "2001:db8:1:2:ffff::9", "2001:db8:1:3::1"},
		{48, "2001:db8:1:ffff::9", "2001:db8:2::1"},
	} {
		t.Run("/"+strconv.Itoa(tc.bits), func(t *testing.T) {
			r := newRig(t, func(c *Config) {
				c.AllowTargets = []string{"192.0.2.0/24"}
				c.AdHocRate, c.AdHocBurst, c.ClientIPv6Prefix = 1, 2, tc.bits
			})
			r.gw.cfg.AdHoc = r.proto
			r.adHocFrom("2001:db8:1:2::1", "192.0.2.9:1")
			r.adHocFrom("2001:db8:1:2::2", "192.0.2.9:1")
			if w := r.adHocFrom(tc.sibling, "192.0.2.9:1"); w.Code != 429 {
				t.Errorf("a third address of the same prefix: got %d, want 429", w.Code)
			}
			if w := r.adHocFrom(tc.other, "192.0.2.9:1"); w.Code != 200 {
				t.Errorf("another prefix: got %d, want 200", w.Code)
			}
		})
	}
}

// headerWriter keeps the headers and status and drops the body, allocating
// nothing itself.
type headerWriter struct {
	h      http.Header
	status int
}

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerWriter) WriteHeader(s int)           { w.status = s }

// A cached answer (a named server's status or an argument-free command,
// 200 or 304) is served from bytes and header values built when it was
// loaded; what is allocated per request is the response's own header
// values (one array: see cache.HeaderValues).
func TestCachedHitAllocatesOnlyItsHeaders(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.TTL = map[string]duration.Duration{"status": duration.Duration(time.Hour), "echo": duration.Duration(time.Hour)}
	})
	for _, path := range []string{"/arena", "/arena/echo"} {
		first := r.do("GET", path, "")
		etag := first.Header().Get("ETag")
		if first.Code != 200 || etag == "" {
			t.Fatalf("%s: got %d ETag %q", path, first.Code, etag)
		}
		r.clock.Advance(3 * time.Second)
		for _, c := range []struct {
			inm  string
			want int
		}{{"", 200}, {etag, 304}} {
			req := httptest.NewRequest("GET", path, nil)
			if c.inm != "" {
				req.Header.Set("If-None-Match", c.inm)
			}
			w := &headerWriter{h: make(http.Header)}
			allocs := testing.AllocsPerRun(100, func() {
				clear(w.h)
				if got := r.gw.ServeHTTP(w, req, req.URL.Path); got != c.want || w.status != c.want {
					t.Fatalf("%s: got %d (written %d), want %d", path, got, w.status, c.want)
				}
			})
			if allocs > 1 {
				t.Errorf("%s If-None-Match %q: %.1f allocations per cached answer, want 1", path, c.inm, allocs)
			}
			want := http.Header{"Content-Type": {"application/json"}, "X-Gamegate-Cache": {"hit"}, "Age": {"3"}, "Etag": {etag}}
			if c.want == 200 {
				want["Content-Length"] = []string{first.Header().Get("Content-Length")}
			}
			if got := fmt.Sprint(w.h); got != fmt.Sprint(want) {
				t.Errorf("%s: headers %s, want %s", path, got, want)
			}
		}
	}
	if r.proto.calls.Load() != 2 {
		t.Fatalf("%d protocol calls, want 2", r.proto.calls.Load())
	}
}

// Handlers after the gateway may edit header values in place (Caddy's
// header directive replacing text does): an edit to one response's
// headers must not reach any other response, cached or not.
func TestResponseHeaderValuesBelongToTheResponse(t *testing.T) {
	r := newRig(t, func(c *Config) { c.TTL = map[string]duration.Duration{"status": duration.Duration(time.Hour)} })
	r.do("GET", "/arena", "")
	r.clock.Advance(2 * time.Second)
	for _, path := range []string{"/arena", "/nothere"} {
		first := r.do("GET", path, "")
		want := fmt.Sprint(first.Header())
		for _, v := range first.Header() {
			for i := range v {
				v[i] += "; edited"
			}
		}
		if got := fmt.Sprint(r.do("GET", path, "").Header()); got != want {
			t.Errorf("%s: after an edit to another response's headers got %s, want %s", path, got, want)
		}
	}
}

type readOnlyEcho struct{ *countingProtocol }

func (readOnlyEcho) ReadOnlyCommands() []string { return []string{"echo", "missing"} }

// Different argument lists are different queries: an argument holding a
// separator, or one empty argument, never shares a cache entry with
// another list (a cached refusal of one would be served for the other).
func TestArgumentListsAreKeyedApart(t *testing.T) {
	r := newRig(t, func(c *Config) { c.AllowTargets = []string{"192.0.2.0/24"} })
	r.gw.cfg.AdHoc = &readOnlyEcho{r.proto}
	for _, c := range []struct{ first, second, wantArgs string }{
		{"/arena/echo?arg=a%00b", "/arena/echo?arg=a&arg=b", `["a","b"]`},
		{"/arena/echo?arg=", "/arena/echo", `null`},
		{"/192.0.2.7:7777/echo?arg=", "/192.0.2.7:7777/echo", `null`},
		{"/192.0.2.7:7777/echo?arg=1:a", "/192.0.2.7:7777/echo?arg=a&arg=", `["a",""]`},
	} {
		calls := r.proto.calls.Load()
		r.do("GET", c.first, "")
		w := r.do("GET", c.second, "")
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"args":`+c.wantArgs) || w.Header().Get("X-Gamegate-Cache") != "miss" {
			t.Errorf("%s after %s: got %d (%s) %s, want a miss with args %s", c.second, c.first, w.Code,
				w.Header().Get("X-Gamegate-Cache"), w.Body, c.wantArgs)
		}
		if n := r.proto.calls.Load() - calls; n != 2 {
			t.Errorf("%s after %s: %d protocol calls, want 2", c.second, c.first, n)
		}
	}
}

// An ad-hoc target is its address and port as parsed, however the port is
// spelled: one cache entry and one upstream budget, and the answer names
// the address, not the first client's spelling.
func TestAdHocTargetIsItsParsedAddress(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"127.0.0.0/8"}
		c.UpstreamRate, c.UpstreamBurst = 1, 1
	})
	r.gw.cfg.AdHoc = r.proto
	for _, target := range []string{"127.0.0.1:7777", "127.0.0.1:07777", "127.0.0.1:0007777", "localhost:7777"} {
		if w := r.do("GET", "/"+target, ""); w.Code != 200 {
			t.Fatalf("%s: got %d %s", target, w.Code, w.Body)
		}
	}
	if n := r.proto.calls.Load(); n != 1 {
		t.Fatalf("one target spelled four ways was queried %d times, want 1", n)
	}
	for _, target := range []string{"127.0.0.1:+7777", "127.0.0.1:-7777", "127.0.0.1:65536", "127.0.0.1:0x1e61"} {
		if w := r.do("GET", "/"+target, ""); w.Code != 400 {
			t.Errorf("%s: got %d, want 400", target, w.Code)
		}
	}
	r.gw.cfg.AdHoc = &readOnlyEcho{r.proto}
	r.do("GET", "/localhost:7778/missing", "")
	if w := r.do("GET", "/127.0.0.1:7778/missing", ""); strings.Contains(w.Body.String(), "localhost") {
		t.Errorf("a cached answer names another client's spelling: %s", w.Body)
	}
}

// Ad-hoc slots are held only by upstream work: while every slot is held by
// queries that do not answer, a cached ad-hoc answer is still served, and
// one client network cannot hold more than its own share.
func TestAdHocSlotsOnlyForUpstreamWork(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	entered := make(chan struct{}, 16)
	slow := &blockingProtocol{entered: entered, release: block}
	r := newRig(t, func(c *Config) {
		c.AllowTargets = []string{"192.0.2.0/24"}
		c.AdHoc = slow
		c.AdHocRate, c.AdHocBurst, c.MaxAdHoc, c.MaxAdHocPerNetwork = 100, 100, 4, 2
	})
	// 192.0.2.9:1 answers once, and is cached.
	go func() { r.adHocFrom("203.0.113.1", "192.0.2.9:1") }()
	<-entered
	block <- struct{}{}
	testutil.WaitFor(t, "the first answer cached", func() bool {
		_, ok, _ := r.gw.other.Peek(resultKey{target: "test/192.0.2.9:1", command: "status"}, r.gw.policy("status"))
		return ok
	})
	// Network 198.51.100.0/24 holds its 2 slots with queries that hang;
	// its third is refused with 429, not queued and not counted globally.
	for i := range 2 {
		go r.adHocFrom("198.51.100."+strconv.Itoa(1+i), "192.0.2."+strconv.Itoa(20+i)+":1")
		<-entered
	}
	if w := r.adHocFrom("198.51.100.3", "192.0.2.30:1"); w.Code != 429 {
		t.Fatalf("a network's third upstream query at once: got %d %s, want 429", w.Code, w.Body)
	}
	// Two other networks fill the global bound of 4.
	for i := range 2 {
		go r.adHocFrom("192.0.2."+strconv.Itoa(100+i)+"", "192.0.2."+strconv.Itoa(40+i)+":1")
		<-entered
	}
	if w := r.adHocFrom("203.0.113.1", "192.0.2.50:1"); w.Code != 503 {
		t.Fatalf("an upstream query past the global bound: got %d %s, want 503", w.Code, w.Body)
	}
	// The cached answer takes no slot.
	if w := r.adHocFrom("203.0.113.1", "192.0.2.9:1"); w.Code != 200 || w.Header().Get("X-Gamegate-Cache") != "hit" {
		t.Fatalf("a cached ad-hoc answer while every slot is held: got %d %s, want a 200 hit", w.Code, w.Body)
	}
	// The refusal was not cached: once slots are free the target is asked.
	for range 4 {
		block <- struct{}{}
	}
	testutil.WaitFor(t, "the slots given back", func() bool {
		r.gw.adHoc.mu.Lock()
		defer r.gw.adHoc.mu.Unlock()
		return r.gw.adHoc.used == 0 && len(r.gw.adHoc.held) == 0
	})
	go func() { <-entered; block <- struct{}{} }()
	if w := r.adHocFrom("203.0.113.1", "192.0.2.50:1"); w.Code != 200 {
		t.Fatalf("the refused target once slots are free: got %d %s, want 200", w.Code, w.Body)
	}
}

// A batch answers each distinct question once, within its byte bound, and
// each client network may send batch_burst batches at once.
func TestBatchMergesRepeatsAndBoundsItsAnswer(t *testing.T) {
	r := newRig(t, func(c *Config) { c.BatchRate, c.BatchBurst = 1, 3 })
	one := r.do("GET", "/arena", "")
	if one.Code != 200 {
		t.Fatalf("status: got %d", one.Code)
	}
	servers := strings.Repeat(`"arena",`, 24) + `"arena"`
	w := r.do("POST", "/", `{"servers": [`+servers+`], "commands": ["status", "status", {"name": "echo", "args": ["x"]}, {"name": "echo", "args": ["x"]}]}`)
	var out struct {
		Results []struct {
			Server, Command string
			Args            []string
			Status          int
			Body            json.RawMessage
		} `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 {
		t.Fatalf("batch: got %d %s (%v)", w.Code, w.Body, err)
	}
	if len(out.Results) != 2 {
		t.Fatalf("100 items asking 2 distinct questions: got %d results, want 2", len(out.Results))
	}
	if w.Body.Len() > 2*one.Body.Len()+300 {
		t.Fatalf("the answer has %d bytes for two questions whose status alone has %d", w.Body.Len(), one.Body.Len())
	}

	// Past max_batch_answer_size (at its least), results are short errors.
	r = newRig(t, func(c *Config) { c.MaxBatchAnswer = MinMaxBatchAnswer })
	big := strings.Repeat("x", MinMaxBatchAnswer/2)
	w = r.do("POST", "/", `{"servers": ["arena"], "commands": ["status", {"name": "echo", "args": ["`+big+`"]}, {"name": "echo", "args": ["`+big+`y"]}]}`)
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || len(out.Results) != 3 {
		t.Fatalf("batch past its bound: got %d %s (%v)", w.Code, w.Body, err)
	}
	tooLarge := 0
	for _, res := range out.Results {
		if res.Status == 413 {
			tooLarge++
			if !strings.Contains(string(res.Body), `"too_large"`) {
				t.Fatalf("a result past the bound: got %s, want a too_large error", res.Body)
			}
		}
	}
	if tooLarge == 0 {
		t.Fatalf("3 results in a bound of one: none answered 413: %s", w.Body)
	}

	// Batches per client network: the burst, then 429 with Retry-After,
	// for any address of the network; another network is not affected.
	r = newRig(t, func(c *Config) { c.BatchRate, c.BatchBurst = 1, 3 })
	from := func(ip string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/", strings.NewReader(`{"servers": ["arena"], "commands": ["status"]}`))
		req.RemoteAddr = ip + ":5000"
		w := httptest.NewRecorder()
		r.gw.ServeHTTP(w, req, "/")
		return w
	}
	for i := range 3 {
		if w := from("198.51.100." + strconv.Itoa(i+1)); w.Code != 200 {
			t.Fatalf("batch %d of the burst: got %d", i+1, w.Code)
		}
	}
	if w := from("198.51.100.200"); w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("a batch past its network's burst: got %d (Retry-After %q), want 429", w.Code, w.Header().Get("Retry-After"))
	}
	if w := from("203.0.113.1"); w.Code != 200 {
		t.Fatalf("another network's batch: got %d", w.Code)
	}
}

// An error a query returned says how the cache served it, as an answer
// does: loaded (miss), then from the failure cache (hit, with its Age)
// until negative_ttl ends. Errors before any query (an unknown server)
// have no such header.
func TestCachedErrorsCarryTheCacheHeader(t *testing.T) {
	r := newRig(t, func(c *Config) { c.NegativeTTL = duration.Duration(10 * time.Second) })
	r.proto.fail.Store(true)
	first := r.do("GET", "/arena", "")
	if first.Code != http.StatusGatewayTimeout || first.Header().Get("X-Gamegate-Cache") != "miss" {
		t.Fatalf("first failure: got %d, X-Gamegate-Cache %q, want 504 miss", first.Code, first.Header().Get("X-Gamegate-Cache"))
	}
	r.clock.Advance(2 * time.Second)
	again := r.do("GET", "/arena", "")
	if again.Code != http.StatusGatewayTimeout || again.Header().Get("X-Gamegate-Cache") != "hit" || again.Header().Get("Age") != "2" {
		t.Fatalf("cached failure: got %d, X-Gamegate-Cache %q, Age %q, want 504 hit 2", again.Code, again.Header().Get("X-Gamegate-Cache"), again.Header().Get("Age"))
	}
	if n := r.proto.calls.Load(); n != 1 {
		t.Fatalf("upstream queries: got %d, want 1 (the failure cached)", n)
	}
	if h := r.do("GET", "/nobody", "").Header().Get("X-Gamegate-Cache"); h != "" {
		t.Fatalf("an unknown server: got X-Gamegate-Cache %q, want none", h)
	}
}

// A 405 names the server its path named; a batch's own errors name none.
func TestMethodNotAllowedNamesItsServer(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range []struct{ method, path, server string }{
		{"POST", "/arena", `"server":"arena"`},
		{"DELETE", "/arena/echo", `"server":"arena"`},
		{"GET", "/", ""},
	} {
		w := r.do(tc.method, tc.path, "")
		body := w.Body.String()
		if w.Code != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s: got %d, want 405", tc.method, tc.path, w.Code)
		}
		if tc.server != "" && !strings.Contains(body, tc.server) || tc.server == "" && strings.Contains(body, `"server"`) {
			t.Errorf("%s %s: got %s, want server %q", tc.method, tc.path, body, tc.server)
		}
	}
}

// A game server's answer that JSON cannot carry (a NaN a protocol passed
// on) is a bad answer, said and logged as such, not an unreachable
// server; and the text of a bad answer that a server chose is cut short
// in the HTTP answer (the log keeps it whole).
func TestUnencodableAndChattyAnswers(t *testing.T) {
	var logged []error
	r := newRig(t, func(c *Config) {
		c.Log = func(_ string, err error) { logged = append(logged, err) }
	})
	w := r.do("GET", "/arena/nan", "")
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), `"type":"bad_answer"`) {
		t.Errorf("a NaN in an answer: got %d %s, want 502 bad_answer", w.Code, w.Body)
	}
	if len(logged) != 1 || !strings.Contains(logged[0].Error(), "NaN") {
		t.Errorf("a NaN in an answer: logged %v, want the encoding error once", logged)
	}
	w = r.do("GET", "/arena/chatty", "")
	if w.Code != http.StatusBadGateway || w.Body.Len() > 1024 || !utf8.Valid(w.Body.Bytes()) {
		t.Errorf("a 40,000-character bad answer: got %d, %d bytes (valid UTF-8 %v), want 502 within 1 KiB", w.Code, w.Body.Len(), utf8.Valid(w.Body.Bytes()))
	}
}

func TestValidateName(t *testing.T) {
	for _, name := range []string{"", DefaultName, strings.Repeat("n", MaxName)} {
		if err := ValidateName(name); err != nil {
			t.Errorf("%q: got %v, want it accepted", name, err)
		}
	}
	for _, name := range []string{"a b", "tab\tname", "nul\x00", "del\x7f", strings.Repeat("n", MaxName+1)} {
		if err := ValidateName(name); err == nil || !strings.Contains(err.Error(), "at most 64 bytes, without spaces or control characters") {
			t.Errorf("%q: got %v, want it refused", name, err)
		}
	}
}

// The options a game_query module's JSON gives as they are (name,
// ad_hoc_games, ttl, the servers' options) are checked by Config's
// Validate, and name has its default there.
func TestConfigChecksTheModulesOptions(t *testing.T) {
	valid := ServerOptions{Address: "192.0.2.1:27960", Commands: []string{"rcon"}, Region: "eu-west", Game: "q3a"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" accepted
	}{
		{"every option", Config{Servers: map[string]Server{"a": valid.Server("a", valid.Address, nil)},
			Options: Options{Name: "public", AdHocGames: []string{"*"}, AllowTargets: []string{"192.0.2.0/24"},
				TTL: map[string]duration.Duration{"status": duration.Duration(MaxTTL)}}}, ""},
		{"name", Config{Options: Options{Name: "a b"}}, `name "a b": at most 64 bytes, without spaces or control characters`},
		{"ad_hoc_games", Config{Options: Options{AdHocGames: []string{"q3a"}}}, "ad_hoc_games needs allow_targets"},
		{"ttl", Config{Options: Options{TTL: map[string]duration.Duration{"status": duration.Duration(MaxTTL + 1)}}}, `ttl "status" must be a duration in [`},
		{"region", Config{Servers: map[string]Server{"a": ServerOptions{Address: "192.0.2.1:1", Region: "eu west"}.Server("a", "192.0.2.1:1", nil)}},
			`server "a": region: 'eu west' holds spaces`},
		{"commands", Config{Servers: map[string]Server{"a": ServerOptions{Address: "192.0.2.1:1", Commands: []string{"a/b"}}.Server("a", "192.0.2.1:1", nil)}},
			`server "a": commands: "a/b" is not a command name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if got := (Config{}).WithDefaults().Name; got != DefaultName {
		t.Errorf("name %q, want %q", got, DefaultName)
	}
	if got, want := valid.Server("a", "192.0.2.9:27960", nil), (Server{Name: "a", Address: "192.0.2.9:27960", Commands: valid.Commands,
		Region: valid.Region, Game: valid.Game}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// A ttl entry of 0 (JSON's zero) is default_ttl, as every zero option is
// its default, not a lifetime of 0 that would send every request to the
// game server.
func TestZeroTTLEntryIsTheDefault(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.TTL = map[string]duration.Duration{"status": 0, "echo": duration.Duration(time.Minute)}
	})
	if got := r.gw.policy("status").TTL; got != time.Second {
		t.Errorf("ttl status 0: lifetime %v, want default_ttl's 1s", got)
	}
	if got := r.gw.policy("echo").TTL; got != time.Minute {
		t.Errorf("ttl echo 1m: lifetime %v, want 1m", got)
	}
	if got := r.gw.policy("other").TTL; got != time.Second {
		t.Errorf("no ttl: lifetime %v, want default_ttl's 1s", got)
	}
}
