package caddymodule

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/caddymodule/caddydiscovery"
	"github.com/gamegate/gamegate/handlers/discovery"
)

// discardWriter is a ResponseWriter that keeps one header map and drops the
// body, so the benchmark measures the handler alone.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(s int)           { w.status = s }

// loadedContext returns a context of a loaded Caddy configuration (admin
// off, nothing served), for handlers whose Provision asks it for Caddy's
// storage: a bare caddy.NewContext has no configuration, and its Storage
// panics. Benchmarks only: it replaces whatever configuration is running.
func loadedContext(b *testing.B) caddy.Context {
	if err := caddy.Load([]byte(`{"admin":{"disabled":true,"config":{"persist":false}},"logging":{"logs":{"default":{"level":"ERROR"}}}}`), true); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = caddy.Stop() })
	ctx, cancel := caddy.NewContext(caddy.ActiveContext())
	b.Cleanup(cancel)
	return ctx
}

func provisionedDiscovery(b *testing.B) *caddydiscovery.QoSDiscovery {
	h := &caddydiscovery.QoSDiscovery{Config: discovery.Config{Fleets: map[string][]discovery.ConfiguredServer{"f": {
		{LocationID: 123, RegionID: "4f7d1d1a-a565-40b4-955a-ff0257d7ed3b", IPv4: "192.0.2.1", IPv6: "2001:db8::1", Port: 9000},
		{LocationID: 456, RegionID: "22bf10c2-2565-4e75-848f-d2df25210896", IPv4: "198.51.100.1", Port: 9000},
	}}, Name: "bench"}}
	if err := h.Provision(loadedContext(b)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Cleanup() })
	return h
}

// BenchmarkDiscoveryServeHTTP measures the handler's hot path, 200 and 304,
// and reports its allocations per request.
func BenchmarkDiscoveryServeHTTP(b *testing.B) {
	h := provisionedDiscovery(b)
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	first := httptest.NewRecorder()
	if err := h.ServeHTTP(first, httptest.NewRequest(http.MethodGet, "/v1/fleets/f/servers", nil), next); err != nil || first.Code != 200 {
		b.Fatalf("first request: %d (%v), want 200", first.Code, err)
	}
	etag := first.Header().Get("ETag")
	for _, bc := range []struct {
		name string
		inm  string
		want int
	}{{"200", "", 200}, {"304", etag, 304}} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/v1/fleets/f/servers", nil)
			if bc.inm != "" {
				r.Header.Set("If-None-Match", bc.inm)
			}
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				if err := h.ServeHTTP(w, r, next); err != nil || w.status != bc.want {
					b.Fatalf("got %d (%v), want %d", w.status, err, bc.want)
				}
			}
		})
	}
}
