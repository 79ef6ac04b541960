package tests

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// startRelayAPIAbuse runs the allocations API behind a trusted proxy
// (loopback), so X-Forwarded-For names the client: /default/ with every
// abuse limit at its default, /quota/ with a small per-client allocation
// quota, /two/ accepting two tokens, /v6/ keying IPv6 clients by /48 with a
// small quota, /full/ with the smallest client tables.
func startRelayAPIAbuse(t *testing.T) string {
	_, base, _ := startRelayAPIAbuseCaddy(t)
	return base
}

// startRelayAPIAbuseCaddy is startRelayAPIAbuse returning the running Caddy
// and its configuration too, for reloads.
func startRelayAPIAbuseCaddy(t *testing.T) (*testcaddy.Caddy, string, string) {
	t.Helper()
	addr := testutil.FreeTCPAddr(t)
	t.Setenv("GAMEGATE_TEST_RELAY_API_SECRET", relayAPISecret)
	config := fmt.Sprintf(`{
	storage file_system %s
	servers {
		trusted_proxies static 127.0.0.1/32
	}
}
http://%s {
	route /default/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.20:7777
		}
	}
	route /quota/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.21:7777
			allocate_burst 50
			max_allocations_per_client 3
		}
	}
	route /two/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s %s
			public_address 203.0.113.22:7777
		}
	}
	route /v6/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.23:7777
			allocate_burst 50
			max_allocations_per_client 3
			client_ipv6_prefix 48
		}
	}
	route /full/* {
		relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.24:7777
			max_clients 16
		}
	}
}
`, t.TempDir(), addr, relayAPIToken, relayAPIToken, relayAPIToken, relayAPIToken2, relayAPIToken, relayAPIToken)
	return testcaddy.Start(t, config), "http://" + addr, config
}

// relayAPIFrom sends a POST as client from (X-Forwarded-For) with token.
func relayAPIFrom(t *testing.T, url, from, token, body string) relayAPIAnswer {
	t.Helper()
	return relayAPIDo(t, "POST", url, token, body, "X-Forwarded-For", from)
}

func wantRetryAfter(t *testing.T, r relayAPIAnswer) {
	t.Helper()
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After: got %q, want a whole number of seconds ≥ 1", r.header.Get("Retry-After"))
	}
}

// Guessing join codes at rate: one client's guesses are refused with 429
// once its burst is spent, and the guesses of others are not.
func TestRelayAPIJoinCodeGuessing(t *testing.T) {
	base := startRelayAPIAbuse(t) + "/default"
	const guesses = 200
	looked, limited := 0, 0
	start := time.Now()
	for i := range guesses {
		code := fmt.Sprintf("%06d", i)
		code = strings.Map(func(r rune) rune { return rune(relay.JoinCodeAlphabet[r-'0']) }, code)
		r := relayAPIFrom(t, base+"/v1/join", "198.51.100.1", relayAPIToken, `{"joinCode":"`+code+`"}`)
		switch r.status {
		case http.StatusNotFound:
			looked++
		case http.StatusTooManyRequests:
			limited++
			if limited == 1 {
				unityErr(t, r, http.StatusTooManyRequests)
				wantRetryAfter(t, r)
			}
		default:
			t.Fatalf("guess %d: got %d %s", i, r.status, r.body)
		}
	}
	// The burst, plus what the rate earned while the guesses were sent (a
	// second's worth or so, more on a slow machine).
	allowed := relay.DefaultJoinBurst + int(time.Since(start).Seconds()*relay.DefaultJoinRate) + 1
	if looked > allowed || limited == 0 {
		t.Fatalf("%d guesses from one client: %d looked up, %d refused with 429; want at most %d looked up", guesses, looked, limited, allowed)
	}
	// Another client is not held back by the first one's guesses; the
	// /64 of an IPv6 client is one client.
	if r := relayAPIFrom(t, base+"/v1/join", "198.51.100.2", relayAPIToken, `{"joinCode":"BBBBBB"}`); r.status != http.StatusNotFound {
		t.Fatalf("another client's join: got %d %s, want 404", r.status, r.body)
	}
	limited = 0
	for i := range relay.DefaultJoinBurst + 5 {
		r := relayAPIFrom(t, base+"/v1/join", fmt.Sprintf("2001:db8:1:2:%x::1", i+1), relayAPIToken, `{"joinCode":"BBBBBB"}`)
		if r.status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatalf("%d joins from one IPv6 /64 spread over its addresses: none refused, want 429 past the burst", relay.DefaultJoinBurst+5)
	}
}

// One token holder taking every allocation: the per-client quota stops it,
// and others still get allocations.
func TestRelayAPIAllocationQuota(t *testing.T) {
	base := startRelayAPIAbuse(t) + "/quota"
	for i := range 3 {
		if r := relayAPIFrom(t, base+"/v1/allocate", "198.51.100.7", relayAPIToken, `{"maxConnections": 1}`); r.status != http.StatusCreated {
			t.Fatalf("allocation %d within the quota: got %d %s", i+1, r.status, r.body)
		}
	}
	for range 20 {
		r := relayAPIFrom(t, base+"/v1/allocate", "198.51.100.7", relayAPIToken, `{"maxConnections": 1}`)
		e := unityErr(t, r, http.StatusTooManyRequests)
		wantRetryAfter(t, r)
		if !strings.Contains(e.Detail, "limit of 3 allocations") {
			t.Fatalf("quota error: got %q, want it to name the limit", e.Detail)
		}
	}
	if r := relayAPIFrom(t, base+"/v1/allocate", "198.51.100.8", relayAPIToken, `{"maxConnections": 1}`); r.status != http.StatusCreated {
		t.Fatalf("another client after the first spent its quota: got %d %s, want 201", r.status, r.body)
	}
	// Allocations made by joining count against the quota too.
	host := relayAPIFrom(t, base+"/v1/allocate", "198.51.100.9", relayAPIToken, `{"maxConnections": 5}`)
	id := unityData[struct {
		Allocation unityAllocation `json:"allocation"`
	}](t, host, http.StatusCreated).Allocation.AllocationID
	code := unityData[struct {
		JoinCode string `json:"joinCode"`
	}](t, relayAPIFrom(t, base+"/v1/joincode", "198.51.100.9", relayAPIToken, `{"allocationId":"`+id+`"}`), http.StatusCreated).JoinCode
	if r := relayAPIFrom(t, base+"/v1/join", "198.51.100.7", relayAPIToken, `{"joinCode":"`+code+`"}`); r.status != http.StatusTooManyRequests {
		t.Fatalf("join by a client at its quota: got %d %s, want 429", r.status, r.body)
	}
}

// Asking for the join code of someone else's allocation.
func TestRelayAPIJoinCodeOwnership(t *testing.T) {
	base := startRelayAPIAbuse(t) + "/two"
	host := unityData[struct {
		Allocation unityAllocation `json:"allocation"`
	}](t, relayAPIFrom(t, base+"/v1/allocate", "198.51.100.30", relayAPIToken, `{"maxConnections": 2}`), http.StatusCreated).Allocation
	body := `{"allocationId":"` + host.AllocationID + `"}`
	for _, tc := range []struct{ name, from, token string }{
		{"another address", "198.51.100.31", relayAPIToken},
		{"another token", "198.51.100.30", relayAPIToken2},
	} {
		r := relayAPIFrom(t, base+"/v1/joincode", tc.from, tc.token, body)
		if e := unityErr(t, r, http.StatusForbidden); strings.Contains(string(r.body), "joinCode") {
			t.Fatalf("%s: the refusal holds a join code: %+v", tc.name, e)
		}
	}
	// The host, as the shipped client calls: same address, same token, the
	// same request shape.
	code := unityData[struct {
		JoinCode string `json:"joinCode"`
	}](t, relayAPIFrom(t, base+"/v1/joincode", "198.51.100.30", relayAPIToken, body), http.StatusCreated).JoinCode
	if code == "" {
		t.Fatal("the host got no join code")
	}
	// Once the code is made, the refusal still holds.
	if r := relayAPIFrom(t, base+"/v1/joincode", "198.51.100.31", relayAPIToken, body); r.status != http.StatusForbidden || strings.Contains(string(r.body), code) {
		t.Fatalf("another client after the code was made: got %d %s, want 403 without the code", r.status, r.body)
	}
}

// spendJoinBurst sends join guesses from client until one is refused with
// 429, and fails the test if none is within the burst and a few more.
func spendJoinBurst(t *testing.T, base, from string) {
	t.Helper()
	for i := range relay.DefaultJoinBurst + 5 {
		r := relayAPIFrom(t, base+"/v1/join", from, relayAPIToken, `{"joinCode":"BBBBBB"}`)
		switch r.status {
		case http.StatusTooManyRequests:
			return
		case http.StatusNotFound:
		default:
			t.Fatalf("join %d from %s: got %d %s", i+1, from, r.status, r.body)
		}
	}
	t.Fatalf("%d joins from %s: none refused", relay.DefaultJoinBurst+5, from)
}

// IPv6 clients are keyed by client_ipv6_prefix: the holder of one /48 is
// one client, whichever /64s and addresses it sends from.
func TestRelayAPIIPv6ClientPrefix(t *testing.T) {
	base := startRelayAPIAbuse(t) + "/v6"
	codes := []int{}
	for i := range 6 {
		from := fmt.Sprintf("2001:db8:7:%x:%x::1", i+1, i*977)
		codes = append(codes, relayAPIFrom(t, base+"/v1/allocate", from, relayAPIToken, `{"maxConnections": 1}`).status)
	}
	want := []int{201, 201, 201, 429, 429, 429}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("allocations from six /64s of one /48: got %v, want %v", codes, want)
	}
	if r := relayAPIFrom(t, base+"/v1/allocate", "2001:db8:8::1", relayAPIToken, `{"maxConnections": 1}`); r.status != http.StatusCreated {
		t.Fatalf("another /48: got %d %s, want 201", r.status, r.body)
	}
}

// Many client addresses fill an endpoint's rate table: a client that spent
// its burst stays limited (newcomers are refused while the table is full
// of clients that are not idle; no client's state is forgotten).
func TestRelayAPIRateTableFull(t *testing.T) {
	base := startRelayAPIAbuse(t) + "/full"
	spendJoinBurst(t, base, "198.51.100.50")
	refused := 0
	for i := range 64 {
		from := fmt.Sprintf("10.9.%d.%d", i/250, i%250+1)
		if r := relayAPIFrom(t, base+"/v1/join", from, relayAPIToken, `{"joinCode":"BBBBBB"}`); r.status == http.StatusTooManyRequests {
			refused++
			wantRetryAfter(t, r)
		}
	}
	// 15 places were free besides the limited client's (more only if the
	// first newcomers went idle, 5 s after their request, on a stalled
	// machine).
	if refused == 0 || refused > 64-15 {
		t.Errorf("64 new clients into a table of 16: %d refused, want 1 to %d", refused, 64-15)
	}
	if r := relayAPIFrom(t, base+"/v1/join", "198.51.100.50", relayAPIToken, `{"joinCode":"BBBBBB"}`); r.status != http.StatusTooManyRequests {
		t.Fatalf("the limited client after 64 others: got %d %s, want 429 (its limit was forgotten)", r.status, r.body)
	}
}

// A configuration reload does not hand clients a fresh burst: the rate
// state lives with the allocation counts, across reloads.
func TestRelayAPIRatesSurviveReload(t *testing.T) {
	c, base, config := startRelayAPIAbuseCaddy(t)
	spendJoinBurst(t, base+"/default", "198.51.100.60")
	for reload := range 2 {
		c.Load(t, config)
		if r := relayAPIFrom(t, base+"/default/v1/join", "198.51.100.60", relayAPIToken, `{"joinCode":"BBBBBB"}`); r.status != http.StatusTooManyRequests {
			t.Fatalf("after reload %d the limited client got %d %s, want 429", reload+1, r.status, r.body)
		}
		if r := relayAPIFrom(t, base+"/default/v1/join", fmt.Sprintf("198.51.100.%d", 61+reload), relayAPIToken, `{"joinCode":"BBBBBB"}`); r.status != http.StatusNotFound {
			t.Fatalf("after reload %d another client got %d %s, want 404", reload+1, r.status, r.body)
		}
	}
}

// relayAPISharedConfig serves allocations APIs for one public_address:
// /small/ admitting smallClients clients to each rate table and, unless
// largeClients is 0, /large/ admitting largeClients, at a join rate so low
// that a client stays in its table for the whole test (it is idle again
// only after 1000 s). extra is added to /small/'s route, after its handler.
func relayAPISharedConfig(t *testing.T, addr, storage string, smallClients, largeClients int, extra string) string {
	t.Helper()
	t.Setenv("GAMEGATE_TEST_RELAY_API_SECRET", relayAPISecret)
	api := func(maxClients int) string {
		return fmt.Sprintf(`relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
			tokens %s
			public_address 203.0.113.40:7777
			max_clients %d
			join_rate 0.001
		}`, relayAPIToken, maxClients)
	}
	routes := "\troute /small/* {\n\t\t" + api(smallClients) + "\n"
	if extra != "" {
		routes += "\t\t" + extra + "\n"
	}
	routes += "\t}\n"
	if largeClients > 0 {
		routes += "\troute /large/* {\n\t\t" + api(largeClients) + "\n\t}\n"
	}
	return fmt.Sprintf(`{
	storage file_system %s
	servers {
		trusted_proxies static 127.0.0.1/32
	}
}
http://%s {
%s}
`, storage, addr, routes)
}

// joinFrom sends one /v1/join for an unknown code from client from and
// returns the status: 404 when the client's request was admitted, 429 when
// it was refused.
func joinFrom(t *testing.T, url, from string) int {
	t.Helper()
	return relayAPIFrom(t, url+"/v1/join", from, relayAPIToken, `{"joinCode":"BBBBBB"}`).status
}

// Two allocations APIs for one public_address share their clients' rate
// state, and each keeps its own max_clients over it: the one admitting 16
// clients refuses the 17th while the other, admitting 32, takes clients up
// to its own bound.
func TestRelayAPISharedRatesKeepEachMaxClients(t *testing.T) {
	addr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, relayAPISharedConfig(t, addr, t.TempDir(), 16, 32, ""))
	small, large := "http://"+addr+"/small", "http://"+addr+"/large"
	// One client per /24, so that no network's join limit comes into it.
	client := func(i int) string { return fmt.Sprintf("10.40.%d.1", i) }
	for i := 1; i <= 16; i++ {
		if got := joinFrom(t, small, client(i)); got != http.StatusNotFound {
			t.Fatalf("client %d of 16 on /small/: got %d, want 404", i, got)
		}
	}
	if got := joinFrom(t, small, client(17)); got != http.StatusTooManyRequests {
		t.Fatalf("client 17 on /small/ (max_clients 16): got %d, want 429", got)
	}
	for i := 17; i <= 32; i++ {
		if got := joinFrom(t, large, client(i)); got != http.StatusNotFound {
			t.Fatalf("client %d on /large/ (max_clients 32): got %d, want 404", i, got)
		}
	}
	if got := joinFrom(t, large, client(33)); got != http.StatusTooManyRequests {
		t.Fatalf("client 33 on /large/ (max_clients 32): got %d, want 429", got)
	}
	if got := joinFrom(t, small, client(34)); got != http.StatusTooManyRequests {
		t.Fatalf("a new client on /small/ with 32 held: got %d, want 429", got)
	}
	// The state is shared: a client /small/ admitted is known to /large/.
	if got := joinFrom(t, large, client(1)); got != http.StatusNotFound {
		t.Fatalf("client 1 on /large/: got %d, want 404", got)
	}
}

// A reload that fails after provisioning an allocations API with another
// max_clients leaves the running API's bound as it was.
func TestRelayAPIFailedReloadKeepsMaxClients(t *testing.T) {
	addr, storage := testutil.FreeTCPAddr(t), t.TempDir()
	c := testcaddy.Start(t, relayAPISharedConfig(t, addr, storage, 16, 0, ""))
	small := "http://" + addr + "/small"
	for i := 1; i <= 16; i++ {
		if got := joinFrom(t, small, fmt.Sprintf("10.41.0.%d", i)); got != http.StatusNotFound {
			t.Fatalf("client %d of 16: got %d, want 404", i, got)
		}
	}
	// /small/ with max_clients 64, then a handler that cannot start: its
	// secret's variable is unset.
	failing := `relay_allocations {
			secrets {env.GAMEGATE_TEST_RELAY_API_UNSET}
			tokens ` + relayAPIToken + `
			public_address 203.0.113.41:7777
		}`
	err := c.LoadFailing(t, relayAPISharedConfig(t, addr, storage, 64, 0, failing))
	if !strings.Contains(err.Error(), "GAMEGATE_TEST_RELAY_API_UNSET") {
		t.Fatalf("the reload failed for another reason: %v", err)
	}
	if got := joinFrom(t, small, "10.41.0.17"); got != http.StatusTooManyRequests {
		t.Fatalf("client 17 after the failed reload: got %d, want 429 (max_clients 16 still)", got)
	}
}
