package discovery

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/httpauth"
)

func TestHandlerAccess(t *testing.T) {
	svc, err := NewService(Config{Fleets: configured(map[string][]Server{"f": seedServers})})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := httpauth.New([]byte("k1"))
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Service: svc, Access: Access{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Keys: keys},
		ClientIP: func(r *http.Request) netip.Addr {
			a, _ := netip.ParseAddr(r.Header.Get("X-Test-IP"))
			return a
		}}
	tests := []struct {
		name, method, ip string
		header           []string
		want             int
		body             string
	}{
		{"outside allow, with key", "GET", "192.0.2.1", []string{"X-Api-Key", "k1"}, 403, "access denied for 192.0.2.1"},
		{"unknown address", "GET", "nonsense", []string{"X-Api-Key", "k1"}, 403, "access denied for an unknown address"},
		{"inside allow, no key", "GET", "10.1.2.3", nil, 401, "a valid API key"},
		{"inside allow, wrong key", "GET", "10.1.2.3", []string{"Authorization", "Bearer k2"}, 401, "a valid API key"},
		{"mapped IPv4 inside allow", "GET", "::ffff:10.1.2.3", []string{"X-Api-Key", "k1"}, 200, ""},
		{"POST", "POST", "10.1.2.3", []string{"X-Api-Key", "k1"}, 405, "method not allowed"},
		{"unknown fleet", "GET", "10.1.2.3", []string{"X-Api-Key", "k1"}, 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/v1/fleets/f/servers", nil)
			r.Header.Set("X-Test-IP", tc.ip)
			for i := 0; i < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			fleet := "f"
			if tc.name == "unknown fleet" {
				fleet = "g"
			}
			w := httptest.NewRecorder()
			if got := h.ServeFleet(w, r, fleet); got != tc.want || w.Code != tc.want {
				t.Fatalf("got %d (recorded %d), want %d", got, w.Code, tc.want)
			}
			if !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("body: got %q, want it to contain %q", w.Body.String(), tc.body)
			}
			if got := w.Header().Get("WWW-Authenticate"); (tc.want == 401) != (got == "Bearer") {
				t.Fatalf("WWW-Authenticate: got %q with status %d", got, tc.want)
			}
			if tc.want == 405 && w.Header().Get("Allow") != "GET, HEAD" {
				t.Fatalf("Allow: got %q, want GET, HEAD", w.Header().Get("Allow"))
			}
		})
	}
}

func TestAccessRestricted(t *testing.T) {
	keys, _ := httpauth.New([]byte("k"))
	for _, tc := range []struct {
		a    Access
		want bool
	}{
		{Access{}, false},
		{Access{Keys: &httpauth.Keys{}}, false},
		{Access{Keys: keys}, true},
		{Access{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, true},
	} {
		if got := tc.a.Restricted(); got != tc.want {
			t.Fatalf("%+v: got %v, want %v", tc.a, got, tc.want)
		}
	}
}

func TestFleetFromPath(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/fleets/abc/servers":         "abc",
		"/x/y/v1/fleets/abc/servers":     "abc",
		"/v1/fleets//servers":            "",
		"/v1/fleets/a/b/servers":         "",
		"/v1/fleets/abc":                 "",
		"/v1/fleets/abc/servers/":        "",
		"/v1/fleets/v1/fleets/x/servers": "x",
	} {
		got, ok := FleetFromPath(path)
		if got != want || ok != (want != "") {
			t.Fatalf("%s: got %q %v, want %q", path, got, ok, want)
		}
	}
}

func TestAdminAPI(t *testing.T) {
	o := NewOverrides()
	a := &Admin{Find: func(name string) *Overrides {
		if name == "default" {
			return o
		}
		return nil
	}}
	do := func(method, path, body string) (*httptest.ResponseRecorder, error) {
		w := httptest.NewRecorder()
		return w, a.Serve(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	}
	status := func(err error) int {
		if err == nil {
			return 0
		}
		return err.(*AdminError).Status
	}
	if _, err := do("GET", "/qos-discovery/nobody/fleets", ""); status(err) != http.StatusNotFound {
		t.Fatalf("unknown name: got %v, want 404", err)
	}
	if _, err := do("GET", "/qos-discovery/default/other", ""); status(err) != http.StatusNotFound {
		t.Fatalf("bad path: got %v, want 404", err)
	}
	if w, err := do("PUT", "/qos-discovery/default/fleets/f", `{"servers": [{"region_id": "r", "ipv4": "192.0.2.1", "port": 9000}]}`); err != nil || w.Code != 204 {
		t.Fatalf("PUT: got %d %v, want 204", w.Code, err)
	}
	if _, err := do("PUT", "/qos-discovery/default/fleets/f", `not json`); status(err) != http.StatusBadRequest {
		t.Fatalf("bad PUT: got %v, want 400", err)
	}
	w, err := do("GET", "/qos-discovery/default/fleets", "")
	if err != nil || w.Body.String() != `{"fleets":{"f":{"servers":[{"region_id":"r","ipv4":"192.0.2.1","port":9000}]}}}`+"\n" {
		t.Fatalf("GET all: got %q %v", w.Body.String(), err)
	}
	if w, err := do("PATCH", "/qos-discovery/default/fleets/f", ""); status(err) != http.StatusMethodNotAllowed || w.Header().Get("Allow") == "" {
		t.Fatalf("PATCH: got %v Allow %q, want 405 with Allow", err, w.Header().Get("Allow"))
	}
	if w, err := do("DELETE", "/qos-discovery/default/fleets/f", ""); err != nil || w.Code != 204 {
		t.Fatalf("DELETE: got %d %v, want 204", w.Code, err)
	}
	if _, err := do("DELETE", "/qos-discovery/default/fleets/f", ""); status(err) != http.StatusNotFound {
		t.Fatalf("second DELETE: got %v, want 404", err)
	}
}
