package discovery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestClientReusesETag(t *testing.T) {
	s, err := NewService(Config{Fleets: configured(map[string][]Server{"f": seedServers})})
	if err != nil {
		t.Fatal(err)
	}
	var requests, conditional atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("If-None-Match") != "" {
			conditional.Add(1)
		}
		id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/prefix/v1/fleets/"), "/servers")
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.Serve(w, r, id)
	}))
	defer srv.Close()

	var c Client
	first, err := c.Fetch(context.Background(), srv.URL+"/prefix", "f")
	if err != nil {
		t.Fatal(err)
	}
	if first.NotModified || len(first.Servers) != 2 || first.Servers[1] != seedServers[1] || first.ETag == "" {
		t.Fatalf("first fetch: got %+v", first)
	}
	second, err := c.Fetch(context.Background(), srv.URL+"/prefix", "f")
	if err != nil {
		t.Fatal(err)
	}
	if !second.NotModified || len(second.Servers) != 2 || second.ETag != first.ETag {
		t.Fatalf("second fetch: got %+v, want the cached list confirmed by a 304", second)
	}
	if requests.Load() != 2 || conditional.Load() != 1 {
		t.Fatalf("got %d requests, %d conditional; want 2 and 1", requests.Load(), conditional.Load())
	}
	if _, err := c.Fetch(context.Background(), srv.URL+"/prefix", "missing"); err == nil || !strings.Contains(err.Error(), "fleet does not exist") {
		t.Fatalf("unknown fleet: got %v, want the service's error message", err)
	}
}
