package discovery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// The example answer of the protocol document, with its two servers.
var seedServers = []Server{
	{LocationID: 123, RegionID: "4f7d1d1a-a565-40b4-955a-ff0257d7ed3b", IPv4: "1.1.1.1", Port: 9000},
	{LocationID: 456, RegionID: "22bf10c2-2565-4e75-848f-d2df25210896", IPv6: "2606:4700:4700::1001", Port: 9000},
}

// configured is fleets as a Config gives them.
func configured(fleets map[string][]Server) map[string][]ConfiguredServer {
	out := make(map[string][]ConfiguredServer, len(fleets))
	for id, list := range fleets {
		for _, s := range list {
			out[id] = append(out[id], ConfiguredServer(s))
		}
	}
	return out
}

func TestParseFleets(t *testing.T) {
	data, err := os.ReadFile("testdata/fleets.json")
	if err != nil {
		t.Fatal(err)
	}
	fleets, err := ParseFleets(data)
	if err != nil {
		t.Fatal(err)
	}
	got := fleets["1c9b4c28-0000-4000-8000-000000000001"]
	if len(got) != 2 || got[0] != seedServers[0] || got[1] != seedServers[1] {
		t.Fatalf("seed fleet: got %+v, want %+v", got, seedServers)
	}
	want := Server{LocationID: 7, RegionID: "eu-west", IPv4: "192.0.2.10", IPv6: "2001:db8::10", Port: 9010}
	if u := fleets["unity-names"]; len(u) != 1 || u[0] != want {
		t.Fatalf("fleet in the Unity client's spelling: got %+v, want %+v", u, want)
	}
}

func TestParseFleetsRejects(t *testing.T) {
	server := func(fields string) string {
		return `{"fleets": {"f": {"servers": [{` + fields + `}]}}}`
	}
	tests := []struct {
		name, doc, want string
	}{
		{"not JSON", `{"fleets":`, "unexpected EOF"},
		{"no fleets key", `{}`, `missing "fleets"`},
		{"no servers key", `{"fleets": {"f": {}}}`, `missing "servers"`},
		{"unknown field", server(`"region_id": "r", "ipv4": "1.2.3.4", "port": 1, "prot": 2`), `unknown field "prot"`},
		{"empty region", server(`"region_id": "", "ipv4": "1.2.3.4", "port": 1`), "region_id is empty"},
		{"port 0", server(`"region_id": "r", "ipv4": "1.2.3.4", "port": 0`), "port 0"},
		{"port 65536", server(`"region_id": "r", "ipv4": "1.2.3.4", "port": 65536`), "port 65536"},
		{"no address", server(`"region_id": "r", "port": 1`), "neither ipv4 nor ipv6"},
		{"ipv6 in ipv4", server(`"region_id": "r", "ipv4": "::1", "port": 1`), "not a dotted-quad"},
		{"ipv4 in ipv6", server(`"region_id": "r", "ipv6": "1.2.3.4", "port": 1`), "not an IPv6"},
		{"conflicting spellings", server(`"region_id": "a", "regionid": "b", "ipv4": "1.2.3.4", "port": 1`), "region_id and regionid differ"},
		{"conflicting location spellings", server(`"region_id": "r", "location_id": 1, "locationid": 2, "ipv4": "1.2.3.4", "port": 1`), "location_id and locationid differ"},
		{"trailing data", `{"fleets": {}} {}`, "after the JSON value"},
		{"slash in fleet id", `{"fleets": {"a/b": {"servers": []}}}`, "path segment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFleets([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseRemovesDuplicates(t *testing.T) {
	s := `{"region_id": "r", "ipv4": "1.2.3.4", "port": 9}`
	got, err := ParseServers([]byte(`{"servers": [` + s + `,` + s + `]}`))
	if err != nil || len(got) != 1 {
		t.Fatalf("got %+v (%v), want one server", got, err)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		names FieldNames
		want  string
	}{
		{BothNames, `{"servers":[{"location_id":123,"region_id":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","locationid":123,"regionid":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","ipv4":"1.1.1.1","ipv6":"","port":9000},{"location_id":456,"region_id":"22bf10c2-2565-4e75-848f-d2df25210896","locationid":456,"regionid":"22bf10c2-2565-4e75-848f-d2df25210896","ipv4":"","ipv6":"2606:4700:4700::1001","port":9000}]}`},
		{SeedNames, `{"servers":[{"location_id":123,"region_id":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","ipv4":"1.1.1.1","ipv6":"","port":9000},{"location_id":456,"region_id":"22bf10c2-2565-4e75-848f-d2df25210896","ipv4":"","ipv6":"2606:4700:4700::1001","port":9000}]}`},
		{UnityNames, `{"servers":[{"locationid":123,"regionid":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","ipv4":"1.1.1.1","ipv6":"","port":9000},{"locationid":456,"regionid":"22bf10c2-2565-4e75-848f-d2df25210896","ipv4":"","ipv6":"2606:4700:4700::1001","port":9000}]}`},
	}
	for _, tt := range tests {
		got := string(Render(seedServers, tt.names))
		if got != tt.want {
			t.Fatalf("names %d:\ngot  %s\nwant %s", tt.names, got, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("names %d: invalid JSON", tt.names)
		}
	}
	if got := string(Render(nil, BothNames)); got != `{"servers":[]}` {
		t.Fatalf("empty fleet: got %s", got)
	}
	odd := []Server{{RegionID: "a\"b\\c\u2028", IPv4: "1.2.3.4", Port: 1}}
	var back struct {
		Servers []struct {
			RegionID string `json:"region_id"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(Render(odd, BothNames), &back); err != nil || back.Servers[0].RegionID != odd[0].RegionID {
		t.Fatalf("escaping: got %+v (%v)", back, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fleetDoc(port int) string {
	return `{"fleets": {"f": {"servers": [{"location_id": 1, "region_id": "r", "ipv4": "192.0.2.1", "port": ` + itoa(port) + `}]}}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func get(s *Service, fleet string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/v1/fleets/"+fleet+"/servers", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.Serve(w, r, fleet)
	return w
}

func TestServiceFileKeepsLastGoodCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleets.json")
	writeFile(t, path, fleetDoc(9000))
	var loads []error
	s, err := NewService(Config{File: path, MaxAge: duration.Duration(20 * time.Minute), OnFileLoad: func(err error) { loads = append(loads, err) }})
	if err != nil {
		t.Fatal(err)
	}
	first := get(s, "f")
	if first.Code != 200 || !strings.Contains(first.Body.String(), `"port":9000`) {
		t.Fatalf("got %d %s, want 200 with port 9000", first.Code, first.Body)
	}
	etag := first.Header().Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) || first.Header().Get("Cache-Control") != "max-age=1200" {
		t.Fatalf("headers: got ETag %q Cache-Control %q", etag, first.Header().Get("Cache-Control"))
	}

	writeFile(t, path, `{"fleets": {"f": {"servers": [`) // broken
	if s.loadFile() {
		t.Fatal("a broken file must not change the served lists")
	}
	again := get(s, "f")
	if again.Code != 200 || again.Header().Get("ETag") != etag || again.Body.String() != first.Body.String() {
		t.Fatalf("after a broken file: got %d ETag %q, want the last good list with ETag %q", again.Code, again.Header().Get("ETag"), etag)
	}
	if len(loads) != 2 || loads[0] != nil || loads[1] == nil {
		t.Fatalf("load reports: got %v, want success then failure", loads)
	}

	writeFile(t, path, fleetDoc(9001))
	if !s.loadFile() {
		t.Fatal("a valid changed file must take effect")
	}
	s.rebuild()
	changed := get(s, "f")
	if changed.Header().Get("ETag") == etag || !strings.Contains(changed.Body.String(), `"port":9001`) {
		t.Fatalf("after a valid change: got ETag %q body %s", changed.Header().Get("ETag"), changed.Body)
	}
	// Writing the same content again keeps the ETag.
	writeFile(t, path, fleetDoc(9001))
	s.loadFile()
	s.rebuild()
	if get(s, "f").Header().Get("ETag") != changed.Header().Get("ETag") {
		t.Fatal("same content: want the same ETag")
	}
}

func TestServiceBrokenSourceWithoutGoodCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleets.json")
	writeFile(t, path, `not json`)
	s, err := NewService(Config{File: path, Fleets: configured(map[string][]Server{"inline": seedServers})})
	if err != nil {
		t.Fatal(err)
	}
	if w := get(s, "f"); w.Code != 500 || !strings.Contains(w.Body.String(), `"error_message":"fleet source unavailable`) {
		t.Fatalf("unknown fleet with a broken file: got %d %s, want 500", w.Code, w.Body)
	} else if strings.Contains(w.Body.String(), path) || strings.Contains(w.Body.String(), "invalid character") {
		t.Fatalf("the 500 carries the file's error text: %s", w.Body)
	}
	if w := get(s, "inline"); w.Code != 200 {
		t.Fatalf("inline fleet with a broken file: got %d, want 200", w.Code)
	}
	writeFile(t, path, fleetDoc(9000))
	s.loadFile()
	s.rebuild()
	if w := get(s, "missing"); w.Code != 404 {
		t.Fatalf("unknown fleet after a good load: got %d, want 404", w.Code)
	}
}

func TestServiceConditionalAndHead(t *testing.T) {
	s, err := NewService(Config{Fleets: configured(map[string][]Server{"f": seedServers}), MaxAge: duration.Duration(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	etag := get(s, "f").Header().Get("ETag")
	bare := strings.TrimSuffix(strings.TrimPrefix(etag, `W/"`), `"`)
	for _, inm := range []string{etag, `"` + bare + `"`, bare, `"x", ` + etag, "*"} {
		w := get(s, "f", "If-None-Match", inm)
		if w.Code != 304 || w.Body.Len() != 0 || w.Header().Get("ETag") != etag || w.Header().Get("Cache-Control") != "max-age=60" {
			t.Fatalf("If-None-Match %q: got %d body %q headers %v, want 304 with ETag and Cache-Control and no body", inm, w.Code, w.Body, w.Header())
		}
	}
	if w := get(s, "f", "If-None-Match", `"other"`); w.Code != 200 {
		t.Fatalf("non-matching If-None-Match: got %d, want 200", w.Code)
	}
	r := httptest.NewRequest(http.MethodHead, "/v1/fleets/f/servers", nil)
	w := httptest.NewRecorder()
	s.Serve(w, r, "f")
	if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != itoa(len(Render(seedServers, BothNames))) {
		t.Fatalf("HEAD: got %d, body %d bytes, Content-Length %s", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
}

func TestOverridesTakePrecedence(t *testing.T) {
	o := NewOverrides()
	s, err := NewService(Config{Fleets: configured(map[string][]Server{"f": seedServers}), Overrides: o})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Stop()
	before := get(s, "f").Header().Get("ETag")
	if err := o.Set("f", seedServers[:1]); err != nil {
		t.Fatal(err)
	}
	w := get(s, "f")
	if w.Header().Get("ETag") == before || strings.Contains(w.Body.String(), "456") {
		t.Fatalf("after an override: got %s, want only the first server", w.Body)
	}
	if _, err := o.Delete("f"); err != nil {
		t.Fatal(err)
	}
	if get(s, "f").Header().Get("ETag") != before {
		t.Fatal("after deleting the override: want the inline list and its ETag back")
	}
}

func TestHealthChecksWithholdFailingServers(t *testing.T) {
	alive := qosEcho(t)
	dead := deadUDPAddr(t)
	servers := []Server{
		{LocationID: 1, RegionID: "alive", IPv4: "127.0.0.1", Port: int(alive.Port())},
		{LocationID: 2, RegionID: "dead", IPv4: "127.0.0.1", Port: int(dead.Port())},
	}
	s, err := NewService(Config{
		Fleets: configured(map[string][]Server{"f": servers, "all-dead": servers[1:]}),
		Health: &HealthConfig{Interval: duration.Duration(time.Hour), Failures: 2, Requests: 2, Wait: duration.Duration(300 * time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.healthRound()
	if s.Withheld() != 0 || !strings.Contains(get(s, "f").Body.String(), `"dead"`) {
		t.Fatal("after one failure: want the server still served")
	}
	s.healthRound()
	body := get(s, "f").Body.String()
	if strings.Contains(body, `"dead"`) || !strings.Contains(body, `"alive"`) {
		t.Fatalf("after two failures: got %s, want the dead server withheld", body)
	}
	// A fleet whose every server fails is served whole.
	if !strings.Contains(get(s, "all-dead").Body.String(), `"dead"`) {
		t.Fatal("a fleet must never be emptied by health checks")
	}
}

func qosEcho(t *testing.T) netip.AddrPort {
	t.Helper()
	table := qos.NewSourceTable(16, nil, 0)
	e, err := qos.NewEngine(qos.Config{Rate: 1000, Burst: 1000, BanUnits: 1, BanDuration: duration.Duration(time.Minute)}, table)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.ServeUDP(t, func(from netip.AddrPort, req []byte) [][]byte {
		if resp, _ := e.Handle(qos.SourceOfAddrPort(from, true, 0), req, nil); resp != nil {
			return [][]byte{resp}
		}
		return nil
	})
}

func FuzzParseFleets(f *testing.F) {
	data, err := os.ReadFile("testdata/fleets.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"fleets":{}}`))
	f.Add([]byte(`{"fleets":{"a":{"servers":[{"region_id":"r","ipv4":"1.2.3.4","port":1,"locationid":3}]}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fleets, err := ParseFleets(in)
		if err != nil {
			return
		}
		for id, list := range fleets {
			if ValidateFleetID(id) != nil {
				t.Fatalf("accepted fleet ID %q", id)
			}
			for _, s := range list {
				if err := s.Validate(); err != nil {
					t.Fatalf("accepted server %+v: %v", s, err)
				}
			}
			// What was accepted renders to valid JSON that parses back.
			body := Render(list, SeedNames)
			back, err := ParseServers(body)
			if err != nil || len(back) != len(list) {
				t.Fatalf("round trip of %s: got %d servers (%v), want %d", body, len(back), err, len(list))
			}
			for i := range back {
				if back[i] != list[i] {
					t.Fatalf("round trip: got %+v, want %+v", back[i], list[i])
				}
			}
		}
	})
}

// Handlers after the service may edit header values in place (Caddy's
// header directive replacing text does): an edit to one response's headers
// must not reach the next response for the same snapshot.
func TestResponseHeaderValuesBelongToTheResponse(t *testing.T) {
	s, err := NewService(Config{Fleets: configured(map[string][]Server{"f": seedServers}), MaxAge: duration.Duration(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	first := get(s, "f")
	want := fmt.Sprint(first.Header())
	for _, v := range first.Header() {
		for i := range v {
			v[i] += "; edited"
		}
	}
	if got := fmt.Sprint(get(s, "f").Header()); got != want {
		t.Fatalf("after an edit to another response's headers got %s, want %s", got, want)
	}
}
