package relay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// memStore is an in-memory APIStore.
type memStore struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail error // returned by every call when set
}

func newMemStore() *memStore { return &memStore{m: make(map[string][]byte)} }

func (s *memStore) Store(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.m[key] = bytes.Clone(value)
	return nil
}

func (s *memStore) Load(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	v, ok := s.m[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return bytes.Clone(v), nil
}

func (s *memStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	delete(s.m, key)
	return nil
}

func (s *memStore) List(_ context.Context, prefix string, _ bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var keys []string
	for k := range s.m {
		if rest, ok := strings.CutPrefix(k, prefix+"/"); ok && !strings.Contains(rest, "/") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fs.ErrNotExist
	}
	return keys, nil
}

func (s *memStore) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[key]
	return ok
}

const apiTestToken = "test-token"

var apiTestSecret = []byte("0123456789abcdef-api-test")

type apiRig struct {
	api    *API
	store  *memStore
	clock  *testutil.Clock
	sealer *Sealer
}

func newAPIRig(t testing.TB, mod func(*APIConfig)) *apiRig {
	t.Helper()
	sealer, err := NewSealer(apiTestSecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &apiRig{store: newMemStore(), clock: testutil.NewClock(time.Unix(1_700_000_000, 0)), sealer: sealer}
	cfg := APIConfig{
		Sealer:     sealer,
		Store:      r.store,
		Tokens:     [][]byte{[]byte(apiTestToken)},
		Regions:    []APIRegion{{ID: "eu-west", Description: "Europe West"}, {ID: "us-east"}},
		PublicHost: "192.0.2.7",
		PublicPort: 7777,
		Now:        r.clock.Now,
		APIOptions: APIOptions{
			MaxBody: 256,
			// Tests of other things send many requests from one client.
			JoinRate: 1e6, JoinBurst: 1e6, AllocateRate: 1e6, AllocateBurst: 1e6,
			JoinCodeRate: 1e6, JoinCodeBurst: 1e6, MaxAllocationsPerClient: 1e6,
			JoinNetworkRate: 1e6, JoinNetworkBurst: 1e6, MaxAllocationsPerNetwork: 1e6,
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	// As many allocations per client and network as in all, at most.
	capacity := cmp.Or(cfg.MaxAllocations, DefaultMaxAllocations)
	cfg.MaxAllocationsPerClient = min(cfg.MaxAllocationsPerClient, capacity)
	cfg.MaxAllocationsPerNetwork = min(cfg.MaxAllocationsPerNetwork, capacity)
	if r.api, err = NewAPI(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

// do sends a request with the test token (unless header overrides
// Authorization) and returns the recorded answer.
func (r *apiRig) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://relay.test"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiTestToken)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	ep, ok := APIEndpointFromPath(req.URL.Path)
	if !ok {
		panic("not an API path: " + path)
	}
	if got := r.api.Serve(w, req, ep); got != w.Code {
		panic("Serve returned a status other than the one written")
	}
	return w
}

func decodeAnswer[T any](t *testing.T, w *httptest.ResponseRecorder, wantStatus int) T {
	t.Helper()
	if w.Code != wantStatus {
		t.Fatalf("status: got %d %s, want %d", w.Code, w.Body, wantStatus)
	}
	var resp APIResponse[T]
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("decoding the answer: %v", err)
	}
	if resp.Meta.Status != wantStatus {
		t.Fatalf("meta.status: got %d, want %d", resp.Meta.Status, wantStatus)
	}
	if _, err := ParseAllocationID(resp.Meta.RequestID); err != nil {
		t.Fatalf("meta.requestId %q: %v", resp.Meta.RequestID, err)
	}
	return resp.Data
}

func decodeAPIError(t *testing.T, w *httptest.ResponseRecorder) APIError {
	t.Helper()
	var e APIError
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("decoding the error %s: %v", w.Body, err)
	}
	if e.Status != w.Code || e.Title != http.StatusText(w.Code) || e.Detail == "" || e.Code == 0 || !strings.HasPrefix(e.Type, "urn:gamegate:relay:") {
		t.Fatalf("error body %s does not fit status %d", w.Body, w.Code)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("error Content-Type: got %q, want application/problem+json", ct)
	}
	return e
}

func (r *apiRig) allocate(t *testing.T, body string) APIAllocation {
	t.Helper()
	return decodeAnswer[AllocationData](t, r.do("POST", "/v1/allocate", body), http.StatusCreated).Allocation
}

func (r *apiRig) joinCode(t *testing.T, id string, wantStatus int) string {
	t.Helper()
	return decodeAnswer[JoinCodeData](t, r.do("POST", "/v1/joincode", `{"allocationId":"`+id+`"}`), wantStatus).JoinCode
}

func TestAPIAllocateJoinCodeJoin(t *testing.T) {
	r := newAPIRig(t, nil)
	host := r.allocate(t, `{"maxConnections": 8}`)
	id, err := ParseAllocationID(host.AllocationID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(host.AllocationIDBytes, id[:]) || len(host.Key) != 64 || len(host.ConnectionData) != ConnectionDataLen {
		t.Fatalf("allocation: got id bytes %x key %d bytes connection data %d bytes", host.AllocationIDBytes, len(host.Key), len(host.ConnectionData))
	}
	if host.Region != "eu-west" || host.HostConnectionData != nil {
		t.Fatalf("allocation: got region %q host connection data %x, want eu-west and none", host.Region, host.HostConnectionData)
	}
	wantServer := APIRelayServer{IPv4: "192.0.2.7", Port: 7777}
	wantEndpoints := []APIServerEndpoint{{ConnectionType: "udp", Network: "udp", Host: "192.0.2.7", Port: 7777}}
	if host.RelayServer != wantServer || len(host.ServerEndpoints) != 1 || host.ServerEndpoints[0] != wantEndpoints[0] {
		t.Fatalf("relay address: got %+v %+v, want %+v %+v", host.RelayServer, host.ServerEndpoints, wantServer, wantEndpoints)
	}
	var opened Allocation
	if err := r.sealer.Open(host.ConnectionData, &opened); err != nil {
		t.Fatal(err)
	}
	if opened.ID != id || !bytes.Equal(opened.Key[:], host.Key) || opened.MaxConnections != 8 || !opened.Expires.Equal(r.clock.Now().Add(DefaultAllocationTTL)) {
		t.Fatalf("sealed: got %+v", opened)
	}

	code := r.joinCode(t, host.AllocationID, http.StatusCreated)
	if len(code) != JoinCodeLen || strings.Trim(code, JoinCodeAlphabet) != "" {
		t.Fatalf("join code %q: want %d characters of %s", code, JoinCodeLen, JoinCodeAlphabet)
	}
	if again := r.joinCode(t, strings.ToUpper(host.AllocationID), http.StatusOK); again != code {
		t.Fatalf("second join code: got %q, want %q", again, code)
	}

	joiner := decodeAnswer[AllocationData](t, r.do("POST", "/v1/join", `{"joinCode":"`+strings.ToLower(code)+`"}`), http.StatusOK).Allocation
	if !bytes.Equal(joiner.HostConnectionData, host.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connection data")
	}
	if joiner.AllocationID == host.AllocationID || joiner.Region != host.Region {
		t.Fatalf("joiner: got %s in %s, want a new allocation in %s", joiner.AllocationID, joiner.Region, host.Region)
	}
	if err := r.sealer.Open(joiner.ConnectionData, &opened); err != nil || opened.MaxConnections != 1 || opened.ID.String() != joiner.AllocationID {
		t.Fatalf("joiner's connection data: got %+v (%v), want its own ID and 1 connection", opened, err)
	}

	other := r.allocate(t, `{"maxConnections": 100, "region": "us-east"}`)
	if other.Region != "us-east" {
		t.Fatalf("region: got %q, want us-east", other.Region)
	}
	regions := decodeAnswer[RegionsData](t, r.do("GET", "/prefix/v1/regions", ""), http.StatusOK)
	want := []APIRegion{{ID: "eu-west", Description: "Europe West"}, {ID: "us-east", Description: "us-east"}}
	if len(regions.Regions) != 2 || regions.Regions[0] != want[0] || regions.Regions[1] != want[1] {
		t.Fatalf("regions: got %+v, want %+v", regions.Regions, want)
	}
	if w := r.do("HEAD", "/v1/regions", ""); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Fatalf("HEAD regions: got %d with %d bytes, want 200 and no body", w.Code, w.Body.Len())
	}
}

func TestAPIErrors(t *testing.T) {
	r := newAPIRig(t, nil)
	host := r.allocate(t, `{"maxConnections": 2}`)
	tests := []struct {
		name     string
		method   string
		path     string
		body     string
		header   []string
		status   int
		code     int
		field    string // expected details key, if any
		inDetail string
	}{
		{"no token", "POST", "/v1/allocate", `{"maxConnections":1}`, []string{"Authorization", ""}, 401, 15401, "", "Bearer"},
		{"wrong token", "POST", "/v1/allocate", `{"maxConnections":1}`, []string{"Authorization", "Bearer nope"}, 401, 15401, "", "Bearer"},
		{"token prefix", "POST", "/v1/allocate", `{"maxConnections":1}`, []string{"Authorization", "Bearer test-toke"}, 401, 15401, "", "Bearer"},
		{"basic scheme", "GET", "/v1/regions", ``, []string{"Authorization", "Basic " + apiTestToken}, 401, 15401, "", "Bearer"},
		{"GET allocate", "GET", "/v1/allocate", ``, nil, 405, 15405, "", "POST"},
		{"POST regions", "POST", "/v1/regions", `{}`, nil, 405, 15405, "", "GET"},
		{"empty body", "POST", "/v1/allocate", ``, nil, 400, 15001, "", "empty"},
		{"bad JSON", "POST", "/v1/allocate", `{"maxConnections": `, nil, 400, 15001, "", "not valid JSON"},
		{"syntax error", "POST", "/v1/allocate", `{"maxConnections" 1}`, nil, 400, 15001, "", "not valid JSON"},
		{"not an object", "POST", "/v1/allocate", `[1]`, nil, 400, 15001, "", "JSON object"},
		{"trailing data", "POST", "/v1/allocate", `{"maxConnections":1} {}`, nil, 400, 15001, "", "after"},
		{"unknown field", "POST", "/v1/allocate", `{"maxConnections":1,"bogus":true}`, nil, 400, 15001, "bogus", "bogus"},
		{"unknown fields, first by name", "POST", "/v1/allocate", `{"zeta":1,"maxConnections":1,"alpha":true}`, nil, 400, 15001, "alpha", "alpha"},
		{"field name in another case", "POST", "/v1/allocate", `{"MaxConnections":1}`, nil, 400, 15001, "MaxConnections", "MaxConnections"},
		{"null body", "POST", "/v1/allocate", `null`, nil, 400, 15400, "maxConnections", "required"},
		{"wrong type", "POST", "/v1/allocate", `{"maxConnections":"4"}`, nil, 400, 15001, "maxConnections", "integer"},
		{"fraction", "POST", "/v1/allocate", `{"maxConnections":1.5}`, nil, 400, 15001, "maxConnections", "integer"},
		{"missing maxConnections", "POST", "/v1/allocate", `{"region":"eu-west"}`, nil, 400, 15400, "maxConnections", "required"},
		{"maxConnections 0", "POST", "/v1/allocate", `{"maxConnections":0}`, nil, 400, 15400, "maxConnections", "between 1 and 100"},
		{"maxConnections 101", "POST", "/v1/allocate", `{"maxConnections":101}`, nil, 400, 15400, "maxConnections", "101"},
		{"unknown region", "POST", "/v1/allocate", `{"maxConnections":1,"region":"mars"}`, nil, 400, 15007, "region", "mars"},
		{"too large", "POST", "/v1/allocate", `{"maxConnections":1,"region":"` + strings.Repeat("x", 300) + `"}`, nil, 413, 15413, "", "256 bytes"},
		{"missing allocationId", "POST", "/v1/joincode", `{}`, nil, 400, 15400, "allocationId", "required"},
		{"bad allocationId", "POST", "/v1/joincode", `{"allocationId":"../../etc"}`, nil, 400, 15400, "allocationId", "UUID"},
		{"unknown allocation", "POST", "/v1/joincode", `{"allocationId":"6fa459ea-ee8a-4ca4-894e-db77e160355e"}`, nil, 404, 15008, "", "not found"},
		{"missing joinCode", "POST", "/v1/join", `{"joinCode":""}`, nil, 400, 15400, "joinCode", "required"},
		{"huge joinCode", "POST", "/v1/join", `{"joinCode":"` + strings.Repeat("B", 65) + `"}`, nil, 400, 15400, "joinCode", "characters"},
		{"unknown joinCode", "POST", "/v1/join", `{"joinCode":"BBBBBB"}`, nil, 404, 15009, "", "not found"},
		{"not a joinCode", "POST", "/v1/join", `{"joinCode":"../../x"}`, nil, 404, 15009, "", "not found"},
		{"joinCode of host allocation id", "POST", "/v1/join", `{"joinCode":"` + host.AllocationID + `"}`, nil, 404, 15009, "", "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := r.do(tc.method, tc.path, tc.body, tc.header...)
			if w.Code != tc.status {
				t.Fatalf("status: got %d %s, want %d", w.Code, w.Body, tc.status)
			}
			e := decodeAPIError(t, w)
			if e.Code != tc.code {
				t.Fatalf("code: got %d, want %d", e.Code, tc.code)
			}
			if !strings.Contains(e.Detail, tc.inDetail) && !strings.Contains(w.Header().Get("Allow")+w.Header().Get("WWW-Authenticate"), tc.inDetail) {
				t.Fatalf("detail %q: want it to mention %q", e.Detail, tc.inDetail)
			}
			if tc.field != "" && (len(e.Details) != 1 || e.Details[0].Key != tc.field) {
				t.Fatalf("details: got %+v, want one about %s", e.Details, tc.field)
			}
			switch tc.status {
			case 401:
				if got := w.Header().Get("WWW-Authenticate"); got != "Bearer" {
					t.Fatalf("WWW-Authenticate: got %q, want Bearer", got)
				}
			case 405:
				if got := w.Header().Get("Allow"); got == "" {
					t.Fatal("405 without Allow")
				}
			}
		})
	}
	t.Run("too large without Content-Length", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/v1/allocate", io.MultiReader(strings.NewReader(`{"maxConnections":1}`), strings.NewReader(strings.Repeat(" ", 300))))
		req.ContentLength = -1
		req.Header.Set("Authorization", "Bearer "+apiTestToken)
		w := httptest.NewRecorder()
		if got := r.api.Serve(w, req, EndpointAllocate); got != http.StatusRequestEntityTooLarge {
			t.Fatalf("got %d %s, want 413", got, w.Body)
		}
	})
}

func TestAPINoTokens(t *testing.T) {
	r := newAPIRig(t, func(c *APIConfig) { c.Tokens = nil })
	if w := r.do("GET", "/v1/regions", "", "Authorization", ""); w.Code != http.StatusOK {
		t.Fatalf("without tokens configured: got %d, want 200", w.Code)
	}
}

func TestAPIJoinCodeExpiry(t *testing.T) {
	r := newAPIRig(t, func(c *APIConfig) { c.JoinCodeTTL = duration.Duration(time.Minute) })
	host := r.allocate(t, `{"maxConnections": 4}`)
	code := r.joinCode(t, host.AllocationID, http.StatusCreated)
	r.clock.Advance(time.Minute - time.Nanosecond)
	if w := r.do("POST", "/v1/join", `{"joinCode":"`+code+`"}`); w.Code != http.StatusOK {
		t.Fatalf("join just before expiry: got %d %s, want 200", w.Code, w.Body)
	}
	r.clock.Advance(time.Nanosecond)
	w := r.do("POST", "/v1/join", `{"joinCode":"`+code+`"}`)
	if w.Code != http.StatusNotFound || decodeAPIError(t, w).Code != 15009 {
		t.Fatalf("join at expiry: got %d %s, want 404", w.Code, w.Body)
	}
	if r.store.has(joinCodeKey(code)) {
		t.Fatal("the expired join code is still stored")
	}
	// The allocation is still valid: it gets a new code.
	fresh := r.joinCode(t, host.AllocationID, http.StatusCreated)
	if w := r.do("POST", "/v1/join", `{"joinCode":"`+fresh+`"}`); w.Code != http.StatusOK {
		t.Fatalf("join with the new code: got %d %s", w.Code, w.Body)
	}
}

func TestAPIAllocationExpiry(t *testing.T) {
	r := newAPIRig(t, func(c *APIConfig) { c.AllocationTTL = duration.Duration(time.Minute) })
	host := r.allocate(t, `{"maxConnections": 4}`)
	id, _ := ParseAllocationID(host.AllocationID)
	r.clock.Advance(time.Minute)
	w := r.do("POST", "/v1/joincode", `{"allocationId":"`+host.AllocationID+`"}`)
	if w.Code != http.StatusNotFound || decodeAPIError(t, w).Code != 15008 {
		t.Fatalf("join code for an expired allocation: got %d %s, want 404", w.Code, w.Body)
	}
	if r.store.has(allocationKey(id)) {
		t.Fatal("the expired allocation is still stored")
	}
}

// scriptedReader returns its bytes, then repeats the last chunk forever.
type scriptedReader struct{ chunks [][]byte }

func (s *scriptedReader) Read(p []byte) (int, error) {
	c := s.chunks[0]
	if len(s.chunks) > 1 {
		s.chunks = s.chunks[1:]
	}
	return copy(p, c), nil
}

func TestAPIJoinCodeCollision(t *testing.T) {
	zeros := make([]byte, 2*JoinCodeLen)           // "666666"
	ones := bytes.Repeat([]byte{1}, 2*JoinCodeLen) // "777777"
	rnd := &scriptedReader{chunks: [][]byte{zeros, zeros, ones, zeros}}
	r := newAPIRig(t, func(c *APIConfig) { c.Rand = rnd })
	a := r.allocate(t, `{"maxConnections": 1}`)
	b := r.allocate(t, `{"maxConnections": 1}`)
	if code := r.joinCode(t, a.AllocationID, http.StatusCreated); code != "666666" {
		t.Fatalf("first code: got %q, want 666666", code)
	}
	if code := r.joinCode(t, b.AllocationID, http.StatusCreated); code != "777777" {
		t.Fatalf("code after a collision: got %q, want 777777", code)
	}
	// Only taken codes left to draw: give up with 503.
	c := r.allocate(t, `{"maxConnections": 1}`)
	w := r.do("POST", "/v1/joincode", `{"allocationId":"`+c.AllocationID+`"}`)
	if w.Code != http.StatusServiceUnavailable || decodeAPIError(t, w).Code != 15503 {
		t.Fatalf("no free code: got %d %s, want 503", w.Code, w.Body)
	}
	// An expired code is free again.
	r.clock.Advance(DefaultJoinCodeTTL)
	if code := r.joinCode(t, c.AllocationID, http.StatusCreated); code != "666666" {
		t.Fatalf("code after expiry: got %q, want 666666", code)
	}
}

func TestAPIAllocationLimit(t *testing.T) {
	limiter := NewAllocationLimiter()
	r := newAPIRig(t, func(c *APIConfig) {
		c.MaxAllocations = 2
		c.AllocationTTL = duration.Duration(time.Minute)
		c.Limiter = limiter
	})
	host := r.allocate(t, `{"maxConnections": 1}`)
	code := r.joinCode(t, host.AllocationID, http.StatusCreated)
	if w := r.do("POST", "/v1/join", `{"joinCode":"`+code+`"}`); w.Code != http.StatusOK {
		t.Fatalf("join: got %d", w.Code)
	}
	for _, try := range []struct{ path, body string }{
		{"/v1/allocate", `{"maxConnections": 1}`},
		{"/v1/join", `{"joinCode":"` + code + `"}`},
	} {
		w := r.do("POST", try.path, try.body)
		if w.Code != http.StatusServiceUnavailable || decodeAPIError(t, w).Code != 15010 {
			t.Fatalf("%s past the limit: got %d %s, want 503", try.path, w.Code, w.Body)
		}
		if got := w.Header().Get("Retry-After"); got != "60" {
			t.Fatalf("Retry-After: got %q, want 60", got)
		}
	}
	r.clock.Advance(time.Minute)
	if n := limiter.Len(r.clock.Now()); n != 0 {
		t.Fatalf("limiter after expiry: got %d, want 0", n)
	}
	r.allocate(t, `{"maxConnections": 1}`)

	// A failed store gives the place back.
	r.store.fail = errors.New("disk on fire")
	if w := r.do("POST", "/v1/allocate", `{"maxConnections": 1}`); w.Code != http.StatusInternalServerError || decodeAPIError(t, w).Code != 15500 {
		t.Fatalf("allocate with a failing store: got %d %s, want 500", w.Code, w.Body)
	} else if strings.Contains(w.Body.String(), "fire") {
		t.Fatalf("the storage error's text reached the client: %s", w.Body)
	}
	if n := limiter.Len(r.clock.Now()); n != 1 {
		t.Fatalf("limiter after a failed allocation: got %d, want 1", n)
	}
	if w := r.do("POST", "/v1/joincode", `{"allocationId":"`+host.AllocationID+`"}`); w.Code != http.StatusInternalServerError {
		t.Fatalf("join code with a failing store: got %d, want 500", w.Code)
	}
	if w := r.do("POST", "/v1/join", `{"joinCode":"`+code+`"}`); w.Code != http.StatusInternalServerError {
		t.Fatalf("join with a failing store: got %d, want 500", w.Code)
	}
}

func TestAPISharedStore(t *testing.T) {
	a := newAPIRig(t, nil)
	b := newAPIRig(t, func(c *APIConfig) { c.Store = a.store; c.Now = a.clock.Now })
	host := a.allocate(t, `{"maxConnections": 3}`)
	code := b.joinCode(t, host.AllocationID, http.StatusCreated)
	if again := a.joinCode(t, host.AllocationID, http.StatusOK); again != code {
		t.Fatalf("code from the other instance: got %q, want %q", again, code)
	}
	joiner := decodeAnswer[AllocationData](t, a.do("POST", "/v1/join", `{"joinCode":"`+code+`"}`), http.StatusOK).Allocation
	if !bytes.Equal(joiner.HostConnectionData, host.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connection data")
	}
}

func TestAPISweep(t *testing.T) {
	r := newAPIRig(t, func(c *APIConfig) {
		c.AllocationTTL = duration.Duration(2 * time.Minute)
		c.JoinCodeTTL = duration.Duration(time.Minute)
	})
	ctx := context.Background()
	if n, err := r.api.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("sweeping an empty store: got %d, %v", n, err)
	}
	host := r.allocate(t, `{"maxConnections": 1}`)
	code := r.joinCode(t, host.AllocationID, http.StatusCreated)
	id, _ := ParseAllocationID(host.AllocationID)
	r.store.m["gamegate/relay/joincodes/NOTOURS"] = []byte("not JSON")
	for _, step := range []struct {
		advance     time.Duration
		deleted     int
		code, alloc bool
	}{
		{0, 0, true, true},
		{time.Minute, 1, false, true},
		{time.Minute, 1, false, false},
	} {
		r.clock.Advance(step.advance)
		n, err := r.api.Sweep(ctx)
		if err != nil || n != step.deleted {
			t.Fatalf("after %v: swept %d (%v), want %d", step.advance, n, err, step.deleted)
		}
		if r.store.has(joinCodeKey(code)) != step.code || r.store.has(allocationKey(id)) != step.alloc {
			t.Fatalf("after %v: join code stored %v, allocation stored %v; want %v, %v", step.advance,
				r.store.has(joinCodeKey(code)), r.store.has(allocationKey(id)), step.code, step.alloc)
		}
	}
	if !r.store.has("gamegate/relay/joincodes/NOTOURS") {
		t.Fatal("the sweeper deleted a record it cannot read")
	}
}

func TestNewJoinCode(t *testing.T) {
	// Bytes at or above 240 (12 × 20) are skipped; the rest map modulo 20.
	src := bytes.NewReader([]byte{255, 240, 0, 1, 19, 20, 239, 39, 9, 9, 9, 9, 9, 9})
	code, err := NewJoinCode(src)
	if err != nil || code != "67W6WW" {
		t.Fatalf("got %q (%v), want 67W6WW", code, err)
	}
	// Every accepted byte value maps to each character equally often.
	cycle := make([]byte, 256*JoinCodeLen)
	for i := range cycle {
		cycle[i] = byte(i)
	}
	rd := bytes.NewReader(cycle)
	counts := make(map[rune]int)
	for range 240 / JoinCodeLen {
		code, err := NewJoinCode(rd)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range code {
			counts[c]++
		}
	}
	if len(counts) != len(JoinCodeAlphabet) {
		t.Fatalf("characters drawn: got %d, want %d", len(counts), len(JoinCodeAlphabet))
	}
	for c, n := range counts {
		if n != 12 {
			t.Fatalf("character %c drawn %d times from one pass over 0..239, want 12", c, n)
		}
	}
	if _, err := NewJoinCode(bytes.NewReader([]byte{250, 250})); err == nil {
		t.Fatal("a reader running dry: got nil error")
	}
}

func TestNormalizeJoinCode(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"BCDFGH", "BCDFGH", true},
		{"bcdfgh", "BCDFGH", true},
		{"6789bcdfghjk", "6789BCDFGHJK", true},
		{"BCDFG", "", false},
		{"6789BCDFGHJKL", "", false},
		{"ABCDEF", "", false},
		{"BCDFG0", "", false},
		{"BCD/GH", "", false},
		{"BCDFGé", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := NormalizeJoinCode(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("got %q %v, want %q %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseAllocationID(t *testing.T) {
	const s = "6fa459ea-ee8a-4ca4-894e-db77e160355e"
	id, err := ParseAllocationID(strings.ToUpper(s))
	if err != nil || id.String() != s {
		t.Fatalf("got %v (%v), want %s", id, err, s)
	}
	for _, bad := range []string{"", "6fa459eaee8a4ca4894edb77e160355e", "6fa459ea-ee8a-4ca4-894e-db77e160355", "6fa459ea-ee8a-4ca4-894e_db77e160355e", "zfa459ea-ee8a-4ca4-894e-db77e160355e", "{6fa459ea-ee8a-4ca4-894e-db77e16035}"} {
		if _, err := ParseAllocationID(bad); err == nil {
			t.Fatalf("%q: got nil error", bad)
		}
	}
}

func TestAPIEndpointFromPath(t *testing.T) {
	tests := []struct {
		path string
		want APIEndpoint
		ok   bool
	}{
		{"/v1/allocate", EndpointAllocate, true},
		{"/relay/v1/joincode", EndpointJoinCode, true},
		{"/a/b/v1/join", EndpointJoin, true},
		{"/v1/regions", EndpointRegions, true},
		{"/v1/regions/", 0, false},
		{"/v1/joincodes", 0, false},
		{"/v2/allocate", 0, false},
		{"/xv1/allocate", 0, false},
		{"/v1/", 0, false},
		{"/", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := APIEndpointFromPath(tc.path)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("got %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if s := EndpointJoinCode.String(); s != "joincode" {
		t.Fatalf("String: got %q, want joincode", s)
	}
}

func TestNewAPIConfig(t *testing.T) {
	sealer, _ := NewSealer(apiTestSecret)
	good := APIConfig{Sealer: sealer, Store: newMemStore(), Regions: []APIRegion{{ID: "eu"}}, PublicHost: "192.0.2.1", PublicPort: 9000}
	if _, err := NewAPI(good); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*APIConfig)
	}{
		{"no sealer", func(c *APIConfig) { c.Sealer = nil }},
		{"no store", func(c *APIConfig) { c.Store = nil }},
		{"max allocations per client past max allocations", func(c *APIConfig) { c.MaxAllocations, c.MaxAllocationsPerClient = 10, 11 }},
		{"bad region", func(c *APIConfig) { c.Regions = []APIRegion{{ID: "a b"}} }},
		{"duplicate region", func(c *APIConfig) { c.Regions = []APIRegion{{ID: "eu"}, {ID: "eu"}} }},
		{"no host", func(c *APIConfig) { c.PublicHost = "" }},
		{"port 0", func(c *APIConfig) { c.PublicPort = 0 }},
		{"max connections", func(c *APIConfig) { c.MaxConnections = 70000 }},
		{"empty token", func(c *APIConfig) { c.Tokens = [][]byte{{}} }},
		{"negative TTL", func(c *APIConfig) { c.JoinCodeTTL = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mod(&cfg)
			if _, err := NewAPI(cfg); err == nil {
				t.Fatal("got nil error")
			}
		})
	}
}

// FuzzAPIRequest sends arbitrary bodies to the endpoints that decode one:
// every answer is a success or a Unity-shaped client error, never a panic
// or a 500.
func FuzzAPIRequest(f *testing.F) {
	for _, seed := range []string{
		`{"maxConnections": 4, "region": "eu-west"}`,
		`{"allocationId": "6fa459ea-ee8a-4ca4-894e-db77e160355e"}`,
		`{"joinCode": "BBBBBB"}`,
		`{"maxConnections": 1, "bogus": true}`,
		`{"MaxConnections": 1}`,
		`{"maxConnections": "4"}`,
		`{"maxConnections": 1} {}`,
		`[1]`, `null`, ``, `{`, `{"joinCode": null}`,
		`{"maxConnections": 1e400}`, `{"a":1,"a":2}`,
	} {
		for ep := range 3 {
			f.Add(uint8(ep), seed)
		}
	}
	// No capacity limit: a long run makes more allocations than the default.
	r := newAPIRig(f, func(c *APIConfig) { c.MaxAllocations = MaxMaxAllocations })
	paths := []string{"/v1/allocate", "/v1/joincode", "/v1/join"}
	f.Fuzz(func(t *testing.T, ep uint8, body string) {
		w := r.do("POST", paths[int(ep)%len(paths)], body)
		switch {
		case w.Code == http.StatusOK || w.Code == http.StatusCreated:
		case w.Code >= 400 && w.Code < 500:
			decodeAPIError(t, w)
		default:
			t.Fatalf("%q: got %d %s", body, w.Code, w.Body)
		}
	})
}
