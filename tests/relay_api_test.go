package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

const (
	relayAPISecret = "relay-api-test-secret-0123456789"
	relayAPIToken  = "token-one-for-these-tests"
	relayAPIToken2 = "token-from-env-for-these-tests"
)

type relayAPIEnv struct {
	a, b    string // http://127.0.0.1:port of the two sites
	storage string // the file_system storage root
	caddy   *testcaddy.Caddy
}

// startRelayAPI runs two sites sharing one file-system storage, as two
// gateways sharing a storage module would: site A with token auth under
// /relay/ (and variants under /short/ and /small/), site B without auth at
// its root.
func startRelayAPI(t *testing.T) *relayAPIEnv {
	t.Helper()
	env := &relayAPIEnv{storage: t.TempDir()}
	addrA, addrB := testutil.FreeTCPAddr(t), testutil.FreeTCPAddr(t)
	env.a, env.b = "http://"+addrA, "http://"+addrB
	t.Setenv("GAMEGATE_TEST_RELAY_API_SECRET", relayAPISecret)
	t.Setenv("GAMEGATE_TEST_RELAY_API_TOKEN", relayAPIToken2)
	env.caddy = testcaddy.Start(t, fmt.Sprintf(`{
	storage file_system %s
}
http://%s {
	route /relay/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s {env.GAMEGATE_TEST_RELAY_API_TOKEN}
			public_address 203.0.113.7:7777
			regions "eu-west=Europe West" us-east
			max_body 512
		}
	}
	route /short/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.7:7777
			join_code_ttl 200ms
			# TestRelayAPIJoinCodeExpiry joins in a loop until the code expires.
			join_rate 1000
			join_burst 1000
			max_allocations_per_client 10000
		}
	}
	route /small/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.9:7777
			max_allocations 2
		}
	}
	respond "other site content" 200
}
http://%s {
	relay_allocations {
		secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
		insecure_no_auth
		public_address 203.0.113.8:7777
		regions eu-west us-east
	}
	respond "site b content" 200
}
`, env.storage, addrA, relayAPIToken, relayAPIToken, relayAPIToken, addrB))
	return env
}

type relayAPIAnswer struct {
	status int
	header http.Header
	body   []byte
}

// relayAPIDo sends a request, with header's name, value pairs; an empty
// token sends no Authorization.
func relayAPIDo(t *testing.T, method, url, token, body string, header ...string) relayAPIAnswer {
	t.Helper()
	if body != "" {
		header = append([]string{"Content-Type", "application/json"}, header...)
	}
	if token != "" {
		header = append([]string{"Authorization", "Bearer " + token}, header...)
	}
	status, h, b := send(t, method, url, strings.NewReader(body), header...)
	return relayAPIAnswer{status, h, b}
}

// The shapes of Unity's Relay Allocations service, as its SDK reads them.
type unityAllocation struct {
	AllocationID       string `json:"allocationId"`
	AllocationIDBytes  []byte `json:"allocationIdBytes"`
	ConnectionData     []byte `json:"connectionData"`
	Key                []byte `json:"key"`
	Region             string `json:"region"`
	HostConnectionData []byte `json:"hostConnectionData"`
	RelayServer        struct {
		IPv4 string `json:"ipV4"`
		Port int    `json:"port"`
	} `json:"relayServer"`
	ServerEndpoints []struct {
		ConnectionType string `json:"connectionType"`
		Network        string `json:"network"`
		Reliable       bool   `json:"reliable"`
		Secure         bool   `json:"secure"`
		Host           string `json:"host"`
		Port           int    `json:"port"`
	} `json:"serverEndpoints"`
}

type unityError struct {
	Status  int    `json:"status"`
	Title   string `json:"title"`
	Detail  string `json:"detail"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
	Details []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"details"`
}

// unityData checks the envelope of a success and decodes its data (strictly:
// no field beyond Unity's).
func unityData[T any](t *testing.T, r relayAPIAnswer, wantStatus int) T {
	t.Helper()
	if r.status != wantStatus {
		t.Fatalf("status: got %d %s, want %d", r.status, r.body, wantStatus)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type: got %q, want application/json", ct)
	}
	var env struct {
		Meta struct {
			RequestID string `json:"requestId"`
			Status    int    `json:"status"`
		} `json:"meta"`
		Data T `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	if env.Meta.Status != wantStatus {
		t.Fatalf("meta.status: got %d, want %d", env.Meta.Status, wantStatus)
	}
	if _, err := relay.ParseAllocationID(env.Meta.RequestID); err != nil {
		t.Fatalf("meta.requestId %q is not a UUID", env.Meta.RequestID)
	}
	return env.Data
}

func unityErr(t *testing.T, r relayAPIAnswer, wantStatus int) unityError {
	t.Helper()
	if r.status != wantStatus {
		t.Fatalf("status: got %d %s, want %d", r.status, r.body, wantStatus)
	}
	var e unityError
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("decoding error %s: %v", r.body, err)
	}
	if e.Status != wantStatus || e.Title != http.StatusText(wantStatus) || e.Detail == "" || e.Type == "" || e.Code == 0 {
		t.Fatalf("error body %s: want status %d, its title, a detail, a type and a code", r.body, wantStatus)
	}
	return e
}

func allocateOK(t *testing.T, base, token, body string) unityAllocation {
	t.Helper()
	return unityData[struct {
		Allocation unityAllocation `json:"allocation"`
	}](t, relayAPIDo(t, "POST", base+"/v1/allocate", token, body), http.StatusCreated).Allocation
}

func joinCodeOK(t *testing.T, base, token, id string, wantStatus int) string {
	t.Helper()
	return unityData[struct {
		JoinCode string `json:"joinCode"`
	}](t, relayAPIDo(t, "POST", base+"/v1/joincode", token, `{"allocationId":"`+id+`"}`), wantStatus).JoinCode
}

func joinOK(t *testing.T, base, token, code string) unityAllocation {
	t.Helper()
	return unityData[struct {
		Allocation unityAllocation `json:"allocation"`
	}](t, relayAPIDo(t, "POST", base+"/v1/join", token, `{"joinCode":"`+code+`"}`), http.StatusOK).Allocation
}

// openConnectionData opens connection data the way the relay does: with a
// sealer built from the same secret.
func openConnectionData(t *testing.T, data []byte) relay.Allocation {
	t.Helper()
	sealer, err := relay.NewSealer([]byte(relayAPISecret))
	if err != nil {
		t.Fatal(err)
	}
	var a relay.Allocation
	if err := sealer.Open(data, &a); err != nil {
		t.Fatalf("the relay's sealer cannot open the connection data: %v", err)
	}
	return a
}

func TestRelayAPIAllocate(t *testing.T) {
	env := startRelayAPI(t)
	base := env.a + "/relay"
	r := relayAPIDo(t, "POST", base+"/v1/allocate", relayAPIToken, `{"maxConnections": 10}`)
	// Every field the SDK reads is present.
	var raw struct {
		Data struct {
			Allocation map[string]json.RawMessage `json:"allocation"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(raw.Data.Allocation))
	for k := range raw.Data.Allocation {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"allocationId", "allocationIdBytes", "connectionData", "key", "region", "relayServer", "serverEndpoints"}
	if !slices.Equal(keys, want) {
		t.Fatalf("allocation fields: got %v, want %v", keys, want)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control: got %q, want no-store", cc)
	}

	a := unityData[struct {
		Allocation unityAllocation `json:"allocation"`
	}](t, r, http.StatusCreated).Allocation
	id, err := relay.ParseAllocationID(a.AllocationID)
	if err != nil {
		t.Fatalf("allocationId %q: %v", a.AllocationID, err)
	}
	if len(a.Key) != 64 || len(a.AllocationIDBytes) != 16 || !bytes.Equal(a.AllocationIDBytes, id[:]) {
		t.Fatalf("key %d bytes, allocationIdBytes %x: want 64 bytes and the UUID's 16 (%x)", len(a.Key), a.AllocationIDBytes, id[:])
	}
	if a.Region != "eu-west" || a.HostConnectionData != nil {
		t.Fatalf("region %q, hostConnectionData %x: want the default eu-west and none", a.Region, a.HostConnectionData)
	}
	if a.RelayServer.IPv4 != "203.0.113.7" || a.RelayServer.Port != 7777 || len(a.ServerEndpoints) != 1 {
		t.Fatalf("relay address: got %+v %+v", a.RelayServer, a.ServerEndpoints)
	}
	if e := a.ServerEndpoints[0]; e.ConnectionType != "udp" || e.Network != "udp" || e.Reliable || e.Secure || e.Host != "203.0.113.7" || e.Port != 7777 {
		t.Fatalf("server endpoint: got %+v, want plain UDP at 203.0.113.7:7777", e)
	}
	sealed := openConnectionData(t, a.ConnectionData)
	if sealed.ID != id || !bytes.Equal(sealed.Key[:], a.Key) || sealed.MaxConnections != 10 {
		t.Fatalf("connection data: got ID %s max %d, want %s and 10 with the same key", sealed.ID, sealed.MaxConnections, id)
	}
	if left := time.Until(sealed.Expires); left < 59*time.Minute || left > time.Hour {
		t.Fatalf("connection data expires in %v, want about the default 1h", left)
	}

	if us := allocateOK(t, base, relayAPIToken, `{"maxConnections": 100, "region": "us-east"}`); us.Region != "us-east" {
		t.Fatalf("region: got %q, want us-east", us.Region)
	}
	regions := unityData[struct {
		Regions []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		} `json:"regions"`
	}](t, relayAPIDo(t, "GET", base+"/v1/regions", relayAPIToken, ""), http.StatusOK).Regions
	if len(regions) != 2 || regions[0].ID != "eu-west" || regions[0].Description != "Europe West" || regions[1].ID != "us-east" || regions[1].Description != "us-east" {
		t.Fatalf("regions: got %+v", regions)
	}
	// The second token, from the environment, is accepted too.
	allocateOK(t, base, relayAPIToken2, `{"maxConnections": 1}`)
	// A handler without regions has one: default.
	if d := allocateOK(t, env.a+"/short", relayAPIToken, `{"maxConnections": 1}`); d.Region != "default" {
		t.Fatalf("region of a handler without regions: got %q, want default", d.Region)
	}
}

func TestRelayAPIJoin(t *testing.T) {
	env := startRelayAPI(t)
	base := env.a + "/relay"
	host := allocateOK(t, base, relayAPIToken, `{"maxConnections": 4, "region": "us-east"}`)
	code := joinCodeOK(t, base, relayAPIToken, host.AllocationID, http.StatusCreated)
	if len(code) != 6 || strings.Trim(code, "6789BCDFGHJKLMNPQRTW") != "" {
		t.Fatalf("join code %q: want 6 characters of 6789BCDFGHJKLMNPQRTW", code)
	}
	if again := joinCodeOK(t, base, relayAPIToken, host.AllocationID, http.StatusOK); again != code {
		t.Fatalf("second join code: got %q, want the same %q", again, code)
	}
	joiner := joinOK(t, base, relayAPIToken, strings.ToLower(code))
	if !bytes.Equal(joiner.HostConnectionData, host.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connectionData")
	}
	if joiner.AllocationID == host.AllocationID || joiner.Region != "us-east" || len(joiner.Key) != 64 {
		t.Fatalf("joiner: got %s in %s, want a new allocation in the host's us-east", joiner.AllocationID, joiner.Region)
	}
	sealed := openConnectionData(t, joiner.ConnectionData)
	if sealed.ID.String() != joiner.AllocationID || sealed.MaxConnections != 1 || !bytes.Equal(sealed.Key[:], joiner.Key) {
		t.Fatalf("joiner's connection data: got ID %s max %d, want %s and 1", sealed.ID, sealed.MaxConnections, joiner.AllocationID)
	}
	if host := openConnectionData(t, joiner.HostConnectionData); host.MaxConnections != 4 {
		t.Fatalf("host connection data: got max %d, want 4", host.MaxConnections)
	}
	// A second player joins with the same code.
	if second := joinOK(t, base, relayAPIToken, code); second.AllocationID == joiner.AllocationID {
		t.Fatal("two joins gave the same allocation")
	}
}

func TestRelayAPIUnauthorized(t *testing.T) {
	env := startRelayAPI(t)
	base := env.a + "/relay"
	for _, tc := range []struct {
		name, method, path, token, body string
	}{
		{"no token", "POST", "/v1/allocate", "", `{"maxConnections": 1}`},
		{"wrong token", "POST", "/v1/allocate", "token-two", `{"maxConnections": 1}`},
		{"wrong token on joincode", "POST", "/v1/joincode", "nope", `{"allocationId":"6fa459ea-ee8a-4ca4-894e-db77e160355e"}`},
		{"wrong token on join", "POST", "/v1/join", "nope", `{"joinCode":"BCDFGH"}`},
		{"no token on regions", "GET", "/v1/regions", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := relayAPIDo(t, tc.method, base+tc.path, tc.token, tc.body)
			unityErr(t, r, http.StatusUnauthorized)
			if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
				t.Fatalf("WWW-Authenticate: got %q, want Bearer", got)
			}
		})
	}
	// Another scheme than Bearer.
	req, _ := http.NewRequest("GET", base+"/v1/regions", nil)
	req.SetBasicAuth("user", relayAPIToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("basic auth: got %d, want 401", resp.StatusCode)
	}
}

func TestRelayAPIBadRequests(t *testing.T) {
	env := startRelayAPI(t)
	base := env.a + "/relay"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		inDetail                 string
	}{
		{"bad JSON", "POST", "/v1/allocate", `{"maxConnections": 4`, 400, "not valid JSON"},
		{"unknown field", "POST", "/v1/allocate", `{"maxConnections": 4, "maxPlayers": 4}`, 400, "maxPlayers"},
		{"wrong type", "POST", "/v1/allocate", `{"maxConnections": "4"}`, 400, "maxConnections"},
		{"maxConnections 0", "POST", "/v1/allocate", `{"maxConnections": 0}`, 400, "maxConnections"},
		{"maxConnections 101", "POST", "/v1/allocate", `{"maxConnections": 101}`, 400, "maxConnections"},
		{"no maxConnections", "POST", "/v1/allocate", `{}`, 400, "maxConnections"},
		{"unknown region", "POST", "/v1/allocate", `{"maxConnections": 4, "region": "mars-1"}`, 400, "mars-1"},
		{"over max_body", "POST", "/v1/allocate", `{"maxConnections": 4, "region": "` + strings.Repeat("x", 600) + `"}`, 413, "512 bytes"},
		{"bad allocationId", "POST", "/v1/joincode", `{"allocationId": "not-a-uuid"}`, 400, "allocationId"},
		{"unknown allocation", "POST", "/v1/joincode", `{"allocationId": "6fa459ea-ee8a-4ca4-894e-db77e160355e"}`, 404, "6fa459ea-ee8a-4ca4-894e-db77e160355e"},
		{"unknown join code", "POST", "/v1/join", `{"joinCode": "BBBBBB"}`, 404, "BBBBBB"},
		{"unknown odd join code", "POST", "/v1/join", `{"joinCode": "NOPE00"}`, 404, "NOPE00"},
		{"GET allocate", "GET", "/v1/allocate", ``, 405, "GET"},
		{"PUT join", "PUT", "/v1/join", `{}`, 405, "PUT"},
		{"POST regions", "POST", "/v1/regions", `{}`, 405, "POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := relayAPIDo(t, tc.method, base+tc.path, relayAPIToken, tc.body)
			e := unityErr(t, r, tc.status)
			if !strings.Contains(e.Detail, tc.inDetail) {
				t.Fatalf("detail %q: want it to mention %q", e.Detail, tc.inDetail)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type: got %q, want application/problem+json", ct)
			}
			if tc.status == 405 {
				want := "POST"
				if strings.HasSuffix(tc.path, "regions") {
					want = "GET, HEAD"
				}
				if got := r.header.Get("Allow"); got != want {
					t.Fatalf("Allow: got %q, want %q", got, want)
				}
			}
		})
	}
	// A 405 does not need a token.
	if r := relayAPIDo(t, "DELETE", base+"/v1/allocate", "", ""); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE without a token: got %d, want 405", r.status)
	}
}

func TestRelayAPIJoinCodeExpiry(t *testing.T) {
	env := startRelayAPI(t)
	base := env.a + "/short" // join_code_ttl 200ms
	host := allocateOK(t, base, relayAPIToken, `{"maxConnections": 2}`)
	code := joinCodeOK(t, base, relayAPIToken, host.AllocationID, http.StatusCreated)
	stored := filepath.Join(env.storage, "gamegate", "relay", "joincodes", code)
	if _, err := os.Stat(stored); err != nil {
		t.Fatalf("the join code is not in the storage: %v", err)
	}
	var last relayAPIAnswer
	testutil.WaitFor(t, "the join code to expire", func() bool {
		last = relayAPIDo(t, "POST", base+"/v1/join", relayAPIToken, `{"joinCode":"`+code+`"}`)
		if last.status != http.StatusOK && last.status != http.StatusNotFound {
			t.Fatalf("join: got %d %s, want 200 until the code expires, then 404", last.status, last.body)
		}
		return last.status == http.StatusNotFound
	})
	if e := unityErr(t, last, http.StatusNotFound); !strings.Contains(e.Detail, code) {
		t.Fatalf("detail %q: want it to name the code", e.Detail)
	}
	if _, err := os.Stat(stored); !os.IsNotExist(err) {
		t.Fatalf("the expired join code is still stored (%v)", err)
	}
	// Another instance sharing the storage refuses it too.
	unityErr(t, relayAPIDo(t, "POST", env.b+"/v1/join", "", `{"joinCode":"`+code+`"}`), http.StatusNotFound)
	// The allocation is still valid, so it gets a fresh code.
	joinCodeOK(t, base, relayAPIToken, host.AllocationID, http.StatusCreated)
}

func TestRelayAPINextHandler(t *testing.T) {
	env := startRelayAPI(t)
	for _, tc := range []struct{ url, want string }{
		{env.a + "/relay/other", "other site content"},
		{env.a + "/relay/v1/allocate/", "other site content"},
		{env.a + "/relay/v2/allocate", "other site content"},
		{env.a + "/v1/allocate", "other site content"}, // outside the route
		{env.b + "/index.html", "site b content"},
	} {
		r := relayAPIDo(t, "POST", tc.url, "", `{"maxConnections": 1}`)
		if r.status != http.StatusOK || string(r.body) != tc.want {
			t.Fatalf("%s: got %d %q, want 200 %q", tc.url, r.status, r.body, tc.want)
		}
	}
}

// Two handlers in different sites sharing one storage stand for two gateways:
// a join code made by one works on the other.
func TestRelayAPISharedStorage(t *testing.T) {
	env := startRelayAPI(t)
	host := allocateOK(t, env.a+"/relay", relayAPIToken, `{"maxConnections": 3}`)
	code := joinCodeOK(t, env.a+"/relay", relayAPIToken, host.AllocationID, http.StatusCreated)
	// The same client with the same token, as the shipped client would be.
	if again := joinCodeOK(t, env.b, relayAPIToken, host.AllocationID, http.StatusOK); again != code {
		t.Fatalf("join code from the other instance: got %q, want %q", again, code)
	}
	// The joiner's allocation is on the host's relay (A's), whichever
	// instance answered the join.
	joiner := joinOK(t, env.b, "", code)
	if !bytes.Equal(joiner.HostConnectionData, host.ConnectionData) || joiner.RelayServer.IPv4 != "203.0.113.7" ||
		len(joiner.ServerEndpoints) != 1 || joiner.ServerEndpoints[0].Host != "203.0.113.7" {
		t.Fatalf("join on the other instance: got host data equal %v at %s (%+v), want the host's data at A's relay address",
			bytes.Equal(joiner.HostConnectionData, host.ConnectionData), joiner.RelayServer.IPv4, joiner.ServerEndpoints)
	}
	// And the other way round.
	hostB := allocateOK(t, env.b, "", `{"maxConnections": 2}`)
	codeB := joinCodeOK(t, env.b, "", hostB.AllocationID, http.StatusCreated)
	if j := joinOK(t, env.a+"/relay", relayAPIToken, codeB); !bytes.Equal(j.HostConnectionData, hostB.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connectionData")
	}
	// The allocation's record is a file of the shared storage, named by its ID.
	if _, err := os.Stat(filepath.Join(env.storage, "gamegate", "relay", "allocations", host.AllocationID)); err != nil {
		t.Fatalf("allocation record: %v", err)
	}
}

func TestRelayAPILimitAndMetrics(t *testing.T) {
	env := startRelayAPI(t)
	base := env.a + "/small" // max_allocations 2
	created := func() float64 {
		n, _ := env.caddy.Metric(t, `gamegate_relay_api_requests_total{code="201",endpoint="allocate"}`)
		return n
	}
	before := created()
	allocsBefore, _ := env.caddy.Metric(t, "gamegate_relay_allocations_total")
	join503Before, _ := env.caddy.Metric(t, `gamegate_relay_api_requests_total{code="503",endpoint="join"}`)
	codesBefore, _ := env.caddy.Metric(t, "gamegate_relay_join_codes_total")

	host := allocateOK(t, base, relayAPIToken, `{"maxConnections": 1}`)
	code := joinCodeOK(t, base, relayAPIToken, host.AllocationID, http.StatusCreated)
	joinOK(t, base, relayAPIToken, code)
	for _, try := range []struct{ path, body string }{
		{"/v1/allocate", `{"maxConnections": 1}`},
		{"/v1/join", `{"joinCode":"` + code + `"}`},
	} {
		r := relayAPIDo(t, "POST", base+try.path, relayAPIToken, try.body)
		unityErr(t, r, http.StatusServiceUnavailable)
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("%s: 503 without Retry-After", try.path)
		}
	}
	// Another relay address has its own count.
	allocateOK(t, env.a+"/relay", relayAPIToken, `{"maxConnections": 1}`)

	if got := created() - before; got != 2 {
		t.Fatalf("allocate 201s counted: got %v, want 2", got)
	}
	if n := env.caddy.MustMetric(t, `gamegate_relay_api_requests_total{code="503",endpoint="join"}`) - join503Before; n != 1 {
		t.Fatalf("join 503s counted: got %v more, want 1", n)
	}
	if n, _ := env.caddy.Metric(t, "gamegate_relay_allocations_total"); n-allocsBefore != 3 {
		t.Fatalf("allocations counted: got %v, want 3 (two hosts, one joiner)", n-allocsBefore)
	}
	if n, _ := env.caddy.Metric(t, "gamegate_relay_join_codes_total"); n-codesBefore != 1 {
		t.Fatalf("join codes counted: got %v, want 1", n-codesBefore)
	}
}
