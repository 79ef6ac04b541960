package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

const fleetID = "1c9b4c28-0000-4000-8000-000000000001"

// The protocol document's example fleet.
const seedFleetBlock = `fleet ` + fleetID + ` {
					server 4f7d1d1a-a565-40b4-955a-ff0257d7ed3b 123 1.1.1.1:9000
					server 22bf10c2-2565-4e75-848f-d2df25210896 456 [2606:4700:4700::1001]:9000
				}`

const seedFleetBody = `{"servers":[` +
	`{"location_id":123,"region_id":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","locationid":123,"regionid":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","ipv4":"1.1.1.1","ipv6":"","port":9000},` +
	`{"location_id":456,"region_id":"22bf10c2-2565-4e75-848f-d2df25210896","locationid":456,"regionid":"22bf10c2-2565-4e75-848f-d2df25210896","ipv4":"","ipv6":"2606:4700:4700::1001","port":9000}]}`

type discoveryEnv struct {
	base  string // http://127.0.0.1:port
	caddy *testcaddy.Caddy
	file  string
	cfg   string
}

func startDiscovery(t *testing.T) *discoveryEnv {
	t.Helper()
	dir := t.TempDir()
	env := &discoveryEnv{file: filepath.Join(dir, "fleets.json")}
	writeFleetsFile(t, env.file, 9100)
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"fleets": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeTCPAddr(t)
	env.base = "http://" + addr
	env.cfg = fmt.Sprintf(`{
	servers {
		trusted_proxies static 127.0.0.1/32
	}
}
http://%s {
	route /open/* {
		qos_discovery {
			%s
			fleets_file %s
			file_poll 100ms
		}
	}
	route /locked/* {
		qos_discovery {
			%s
			allow 10.0.0.0/8
			name locked
		}
	}
	route /keyed/* {
		qos_discovery {
			%s
			api_keys secret-one-0123456789 {env.GAMEGATE_TEST_DISCOVERY_KEY}
			name keyed
		}
	}
	route /broken/* {
		qos_discovery {
			fleets_file %s
			name broken
		}
	}
	respond "other site content" 200
}
`, addr, seedFleetBlock, env.file, seedFleetBlock, seedFleetBlock, broken)
	t.Setenv("GAMEGATE_TEST_DISCOVERY_KEY", "secret-two-0123456789")
	env.caddy = testcaddy.Start(t, env.cfg)
	return env
}

func writeFleetsFile(t *testing.T, path string, port int) {
	t.Helper()
	doc := fmt.Sprintf(`{"fleets": {"file-fleet": {"servers": [{"location_id": 9, "region_id": "from-file", "ipv4": "192.0.2.9", "ipv6": "", "port": %d}]}}}`, port)
	if err := os.WriteFile(path+".tmp", []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

type response struct {
	status int
	header http.Header
	body   string
}

func request(t *testing.T, method, url string, header ...string) response {
	t.Helper()
	status, h, body := send(t, method, url, nil, header...)
	return response{status, h, string(body)}
}

// send sends a request with header's name, value pairs and returns the
// answer's status, header and whole body.
func send(t *testing.T, method, url string, body io.Reader, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func TestDiscoveryEndToEnd(t *testing.T) {
	env := startDiscovery(t)
	url := env.base + "/open/v1/fleets/" + fleetID + "/servers"

	ok := request(t, "GET", url)
	if ok.status != 200 || ok.body != seedFleetBody {
		t.Fatalf("GET: got %d %s, want 200 %s", ok.status, ok.body, seedFleetBody)
	}
	etag := ok.header.Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) || ok.header.Get("Content-Type") != "application/json" ||
		ok.header.Get("Cache-Control") != "max-age=1200" || ok.header.Get("Content-Length") != fmt.Sprint(len(seedFleetBody)) {
		t.Fatalf("GET headers: got %v", ok.header)
	}

	bare := strings.TrimSuffix(strings.TrimPrefix(etag, `W/"`), `"`)
	for name, inm := range map[string]string{
		"weak":   etag,
		"quoted": `"` + bare + `"`,
		"bare":   bare,
		"list":   `"stale", W/"older", ` + etag,
		"star":   "*",
	} {
		t.Run("304 "+name, func(t *testing.T) {
			r := request(t, "GET", url, "If-None-Match", inm)
			if r.status != 304 || r.body != "" || r.header.Get("ETag") != etag || r.header.Get("Cache-Control") != "max-age=1200" {
				t.Fatalf("If-None-Match %q: got %d body %q ETag %q Cache-Control %q, want 304 with ETag and Cache-Control and no body",
					inm, r.status, r.body, r.header.Get("ETag"), r.header.Get("Cache-Control"))
			}
		})
	}
	if r := request(t, "GET", url, "If-None-Match", `"something-else"`); r.status != 200 {
		t.Fatalf("non-matching If-None-Match: got %d, want 200", r.status)
	}

	head := request(t, "HEAD", url)
	if head.status != 200 || head.body != "" || head.header.Get("ETag") != etag || head.header.Get("Content-Length") != fmt.Sprint(len(seedFleetBody)) {
		t.Fatalf("HEAD: got %d body %q headers %v", head.status, head.body, head.header)
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		r := request(t, m, url)
		if r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("%s: got %d Allow %q, want 405 with Allow: GET, HEAD", m, r.status, r.header.Get("Allow"))
		}
	}

	notFound := request(t, "GET", env.base+"/open/v1/fleets/no-such-fleet/servers")
	want404 := `{"success":false,"error":true,"error_code":-1,"error_message":"fleet does not exist","messages":[]}`
	if notFound.status != 404 || notFound.body != want404 || notFound.header.Get("Content-Type") != "application/json" {
		t.Fatalf("unknown fleet: got %d %s, want 404 %s", notFound.status, notFound.body, want404)
	}
	broken := request(t, "GET", env.base+"/broken/v1/fleets/any/servers")
	var errBody map[string]any
	if broken.status != 500 || json.Unmarshal([]byte(broken.body), &errBody) != nil ||
		errBody["success"] != false || errBody["error"] != true || errBody["error_code"] != float64(-1) ||
		!strings.HasPrefix(fmt.Sprint(errBody["error_message"]), "fleet source unavailable") || fmt.Sprint(errBody["messages"]) != "[]" {
		t.Fatalf("broken source: got %d %s, want 500 with the error shape", broken.status, broken.body)
	}

	// Paths that are not discovery requests go on to the next handler.
	if r := request(t, "GET", env.base+"/open/v1/fleets/"+fleetID); r.status != 200 || r.body != "other site content" {
		t.Fatalf("non-discovery path: got %d %q, want the next handler's answer", r.status, r.body)
	}
}

func TestDiscoveryForbidden(t *testing.T) {
	env := startDiscovery(t)
	locked := env.base + "/locked/v1/fleets/" + fleetID + "/servers"
	r := request(t, "GET", locked)
	if r.status != 403 || r.body != "access denied for 127.0.0.1" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("outside the allow-list: got %d %q %q, want 403 text/plain \"access denied for 127.0.0.1\"", r.status, r.body, r.header.Get("Content-Type"))
	}
	// Through a trusted proxy, the client address is the forwarded one.
	r = request(t, "GET", locked, "X-Forwarded-For", "203.0.113.9")
	if r.status != 403 || r.body != "access denied for 203.0.113.9" {
		t.Fatalf("forwarded client outside the allow-list: got %d %q", r.status, r.body)
	}
	r = request(t, "GET", locked, "X-Forwarded-For", "10.1.2.3")
	if r.status != 200 || r.body != seedFleetBody {
		t.Fatalf("forwarded client inside the allow-list: got %d %q, want 200", r.status, r.body)
	}
	// An answer only some clients may read is not for shared caches.
	if got := r.header.Get("Cache-Control"); got != "private, max-age=1200" {
		t.Fatalf("answer behind allow: got Cache-Control %q, want private, max-age=1200", got)
	}

	keyed := env.base + "/keyed/v1/fleets/" + fleetID + "/servers"
	for _, tc := range []struct {
		header []string
		want   int
	}{
		{nil, 401},
		{[]string{"X-Api-Key", "wrong"}, 401},
		{[]string{"Authorization", "Bearer wrong"}, 401},
		{[]string{"Authorization", "Basic secret-one-0123456789"}, 401},
		{[]string{"X-Api-Key", "secret-one-0123456789"}, 200},
		{[]string{"Authorization", "Bearer secret-two-0123456789"}, 200}, // from {env.…}
	} {
		r := request(t, "GET", keyed, tc.header...)
		if r.status != tc.want {
			t.Fatalf("api key %v: got %d, want %d", tc.header, r.status, tc.want)
		}
		if tc.want == 401 && r.header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("api key %v: got WWW-Authenticate %q, want Bearer", tc.header, r.header.Get("WWW-Authenticate"))
		}
		if tc.want == 200 && r.header.Get("Cache-Control") != "private, max-age=1200" {
			t.Fatalf("authenticated answer: got Cache-Control %q, want private", r.header.Get("Cache-Control"))
		}
	}
	// Keys cannot be guessed fast: after 20 requests without a valid key
	// (4 above), the network gets 429 with Retry-After, whatever key it
	// sends, as the relay allocations API answers a token guesser.
	for i := 4; i < 20; i++ {
		if r := request(t, "GET", keyed, "Authorization", "Bearer guess"); r.status != 401 {
			t.Fatalf("wrong key %d: got %d, want 401", i+1, r.status)
		}
	}
	for _, key := range []string{"guess", "secret-one-0123456789"} {
		r := request(t, "GET", keyed, "Authorization", "Bearer "+key)
		if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "without a valid API key") {
			t.Fatalf("key %q after 20 wrong ones: got %d %q (Retry-After %q), want 429 with Retry-After", key, r.status, r.body, r.header.Get("Retry-After"))
		}
	}
}

// unityDiscoveryClient behaves as the shipped Unity discovery client does: it
// keeps only a weak ETag, sends its bare value back unquoted, reads
// locationid and regionid by exact name, and drops a server unless ipv4
// parses, port ≠ 0 and the region is not empty.
type unityDiscoveryClient struct {
	etag    string
	servers []unityServer
}

type unityServer struct {
	LocationID int64
	RegionID   string
	IPv4       string
	Port       int
}

func (c *unityDiscoveryClient) fetch(t *testing.T, url string) int {
	t.Helper()
	var hdr []string
	if c.etag != "" {
		hdr = []string{"If-None-Match", c.etag}
	}
	r := request(t, "GET", url, hdr...)
	if r.status == 304 {
		return 304
	}
	if r.status != 200 {
		t.Fatalf("unity client: got %d", r.status)
	}
	if e := r.header.Get("ETag"); strings.HasPrefix(e, `W/"`) {
		c.etag = strings.TrimSuffix(strings.TrimPrefix(e, `W/"`), `"`)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatal(err)
	}
	c.servers = nil
	list, _ := doc["servers"].([]any)
	for _, item := range list {
		m := item.(map[string]any)
		loc, _ := m["locationid"].(float64)
		region, _ := m["regionid"].(string)
		ipv4, _ := m["ipv4"].(string)
		port, _ := m["port"].(float64)
		if region == "" || port == 0 || net4(ipv4) == "" {
			continue
		}
		c.servers = append(c.servers, unityServer{int64(loc), region, ipv4, int(port)})
	}
	return 200
}

func net4(s string) string {
	var a, b, c, d int
	if n, _ := fmt.Sscanf(s, "%d.%d.%d.%d", &a, &b, &c, &d); n != 4 {
		return ""
	}
	return s
}

func TestDiscoveryUnityClient(t *testing.T) {
	env := startDiscovery(t)
	url := env.base + "/open/v1/fleets/" + fleetID + "/servers"
	var c unityDiscoveryClient
	if got := c.fetch(t, url); got != 200 {
		t.Fatalf("first request: got %d, want 200", got)
	}
	if c.etag == "" {
		t.Fatal("the client found no weak ETag to keep")
	}
	// The client's rules keep the IPv4 server; the IPv6-only one has an
	// empty ipv4 and is dropped by the client itself.
	want := unityServer{123, "4f7d1d1a-a565-40b4-955a-ff0257d7ed3b", "1.1.1.1", 9000}
	if len(c.servers) != 1 || c.servers[0] != want {
		t.Fatalf("servers read: got %+v, want [%+v]", c.servers, want)
	}
	if got := c.fetch(t, url); got != 304 {
		t.Fatalf("second request with the bare ETag: got %d, want 304", got)
	}

	// A fleet of IPv4 servers: every one parsed.
	put(t, env, "/qos-discovery/default/fleets/unity-fleet", `{"servers": [
		{"location_id": 1, "region_id": "eu", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "port": 9000},
		{"location_id": 2, "region_id": "us", "ipv4": "192.0.2.2", "ipv6": "", "port": 9001}]}`, 204)
	var c2 unityDiscoveryClient
	c2.fetch(t, env.base+"/open/v1/fleets/unity-fleet/servers")
	if len(c2.servers) != 2 || c2.servers[0].RegionID != "eu" || c2.servers[1].Port != 9001 {
		t.Fatalf("servers read: got %+v, want both", c2.servers)
	}
	if got := c2.fetch(t, env.base+"/open/v1/fleets/unity-fleet/servers"); got != 304 {
		t.Fatalf("second request: got %d, want 304", got)
	}
}

func put(t *testing.T, env *discoveryEnv, path, body string, want int) string {
	t.Helper()
	req, err := http.NewRequest("PUT", "http://"+env.caddy.AdminAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("PUT %s: got %d %s, want %d", path, resp.StatusCode, b, want)
	}
	return string(b)
}

func TestDiscoveryFleetsFile(t *testing.T) {
	env := startDiscovery(t)
	url := env.base + "/open/v1/fleets/file-fleet/servers"
	first := request(t, "GET", url)
	if first.status != 200 || !strings.Contains(first.body, `"port":9100`) {
		t.Fatalf("file fleet: got %d %s", first.status, first.body)
	}
	etag := first.header.Get("ETag")

	// This handler is named "default"; the test site's other handlers have
	// their own series.
	const errorsSeries = `gamegate_discovery_fleets_file_errors_total{name="default"}`
	const okSeries = `gamegate_discovery_fleets_file_ok{name="default"}`
	if ok, found := env.caddy.Metric(t, okSeries); !found || ok != 1 {
		t.Fatalf("%s with a good file: got %v (found %v), want 1", okSeries, ok, found)
	}
	errorsBefore, _ := env.caddy.Metric(t, errorsSeries)
	if err := os.WriteFile(env.file, []byte(`{"fleets": {"file-fleet": {"servers": [{"region_id": `), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the broken file to be read", func() bool {
		n, _ := env.caddy.Metric(t, errorsSeries)
		return n == errorsBefore+1
	})
	if ok, found := env.caddy.Metric(t, okSeries); !found || ok != 0 {
		t.Fatalf("%s after a broken file: got %v (found %v), want 0", okSeries, ok, found)
	}
	kept := request(t, "GET", url)
	if kept.status != 200 || kept.body != first.body || kept.header.Get("ETag") != etag {
		t.Fatalf("after a broken file: got %d %s ETag %s, want the previous list and ETag %s", kept.status, kept.body, kept.header.Get("ETag"), etag)
	}
	if r := request(t, "GET", url, "If-None-Match", etag); r.status != 304 {
		t.Fatalf("after a broken file, conditional request: got %d, want 304", r.status)
	}

	// The unchanged broken file is not counted again at every poll.
	time.Sleep(200 * time.Millisecond) // four polls
	if n, _ := env.caddy.Metric(t, errorsSeries); n != errorsBefore+1 {
		t.Fatalf("%s after four polls of the same broken file: got %v, want %v", errorsSeries, n, errorsBefore+1)
	}
	writeFleetsFile(t, env.file, 9200)
	testutil.WaitFor(t, "the valid file to take effect", func() bool {
		return strings.Contains(request(t, "GET", url).body, `"port":9200`)
	})
	if ok, _ := env.caddy.Metric(t, okSeries); ok != 1 {
		t.Fatalf("%s after a good file again: got %v, want 1", okSeries, ok)
	}
	changed := request(t, "GET", url, "If-None-Match", etag)
	if changed.status != 200 || changed.header.Get("ETag") == etag {
		t.Fatalf("after a valid change: got %d ETag %s, want 200 with a new ETag", changed.status, changed.header.Get("ETag"))
	}
}

func TestDiscoveryAdminAPI(t *testing.T) {
	env := startDiscovery(t)
	url := env.base + "/open/v1/fleets/" + fleetID + "/servers"
	etag := request(t, "GET", url).header.Get("ETag")
	path := "/qos-discovery/default/fleets/" + fleetID

	for _, bad := range []string{`{"servers": [{"region_id": ""}]}`, `not json`, `{"servers": [{"region_id": "r", "ipv4": "1.2.3.4", "port": 70000}]}`} {
		put(t, env, path, bad, 400)
		if r := request(t, "GET", url); r.header.Get("ETag") != etag || r.body != seedFleetBody {
			t.Fatalf("after an invalid PUT (%s): got ETag %s, want the previous list and ETag", bad, r.header.Get("ETag"))
		}
	}
	put(t, env, "/qos-discovery/nobody/fleets/x", `{"servers": []}`, 404)

	put(t, env, path, `{"servers": [{"location_id": 5, "region_id": "admin-set", "ipv4": "192.0.2.5", "ipv6": "", "port": 9500}]}`, 204)
	r := request(t, "GET", url, "If-None-Match", etag)
	if r.status != 200 || r.header.Get("ETag") == etag || !strings.Contains(r.body, `"admin-set"`) {
		t.Fatalf("after PUT: got %d %s, want the new list with a new ETag", r.status, r.body)
	}
	newTag := r.header.Get("ETag")

	// The same content again keeps the ETag.
	put(t, env, path, `{"servers": [{"location_id": 5, "region_id": "admin-set", "ipv4": "192.0.2.5", "ipv6": "", "port": 9500}]}`, 204)
	if r := request(t, "GET", url, "If-None-Match", newTag); r.status != 304 {
		t.Fatalf("after an identical PUT: got %d, want 304", r.status)
	}

	// A configuration reload keeps admin-set lists.
	env.caddy.Load(t, env.cfg)
	if r := request(t, "GET", url, "If-None-Match", newTag); r.status != 304 {
		t.Fatalf("after a reload: got %d, want 304 (the admin-set list kept)", r.status)
	}

	req, _ := http.NewRequest("DELETE", "http://"+env.caddy.AdminAddr+path, nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE: got %d, want 204", resp.StatusCode)
	}
	if r := request(t, "GET", url, "If-None-Match", etag); r.status != 304 {
		t.Fatalf("after DELETE: got %d, want 304 for the inline list's ETag", r.status)
	}
}
