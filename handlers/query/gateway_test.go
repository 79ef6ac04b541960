package query

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// countingProtocol answers from fixed values and counts what it was asked.
type countingProtocol struct {
	calls atomic.Int32
	fail  atomic.Bool
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
	switch {
	case p.fail.Load():
		return nil, Timeout(address)
	case command == "missing":
		return nil, &Error{HTTPStatus: http.StatusNotFound, Message: "unknown command", ProtocolStatus: 20}
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
		Servers:      map[string]Server{"arena": {Name: "arena", Address: "192.0.2.1:27960", Protocol: r.proto}},
		DefaultTTL:   time.Second,
		StaleIfError: time.Minute,
		NegativeTTL:  time.Second,
		Now:          r.clock.Now,
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
		c.AllowTargets = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
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

func TestRateLimitPerServer(t *testing.T) {
	r := newRig(t, func(c *Config) { c.RateLimit, c.RateBurst = 1, 2 })
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
