package serverlist

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                         false,
		"gzip":                     true,
		"gzip, deflate, br, zstd":  true, // Chromium's
		"GZIP;q=0.5":               true,
		"x-gzip":                   true,
		"br":                       false,
		"identity":                 false,
		"*":                        true,
		"*;q=0":                    false,
		"gzip;q=0":                 false,
		"gzip;q=0, *":              false, // named wins over *
		"*, gzip;q=0":              false,
		"gzip;q=0.000":             false,
		"gzip;q=x":                 false,
		"gzip;q=2":                 false,
		"deflate;q=1, gzip ; q=1 ": true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// A client that accepts gzip gets the held answer gzipped, with its own
// ETag (a 304 answers it) and Vary: Accept-Encoding; one that does not
// gets the same bytes as before.
func TestGzippedAnswers(t *testing.T) {
	r := newRig(t, nil)
	get := func(accept, ifNoneMatch string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "127.0.0.1:9"
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		w := httptest.NewRecorder()
		r.list.ServeHTTP(w, req)
		return w
	}
	plain := get("", "")
	if plain.Code != 200 || plain.Header().Get("Content-Encoding") != "" || plain.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("identity: %d %v", plain.Code, plain.Header())
	}
	if plain.Body.Len() < minGzip {
		t.Fatalf("the rig's answer is %d bytes, under the %d gzipped: the test would test nothing", plain.Body.Len(), minGzip)
	}
	z := get("gzip, deflate, br", "")
	if z.Code != 200 || z.Header().Get("Content-Encoding") != "gzip" || z.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: %d %v", z.Code, z.Header())
	}
	if z.Header().Get("Content-Length") != itoa(z.Body.Len()) || z.Body.Len() >= plain.Body.Len() {
		t.Fatalf("gzip: Content-Length %s for %d bytes (identity %d)", z.Header().Get("Content-Length"), z.Body.Len(), plain.Body.Len())
	}
	zr, err := gzip.NewReader(bytes.NewReader(z.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, plain.Body.Bytes()) {
		t.Fatalf("gunzipped answer differs from the identity one (%v)", err)
	}
	ze, pe := z.Header().Get("Etag"), plain.Header().Get("Etag")
	if ze == "" || ze == pe {
		t.Fatalf("ETags gzip %q identity %q: want two", ze, pe)
	}
	if w := get("gzip", ze); w.Code != 304 {
		t.Fatalf("If-None-Match of the gzip ETag: %d", w.Code)
	}
	if w := get("", ze); w.Code != 200 || w.Header().Get("Content-Encoding") != "" {
		t.Fatalf("the gzip ETag from a client that no longer accepts gzip: %d %v", w.Code, w.Header())
	}
	if n, held := r.list.heldAnswers(); n != 1 || held != plain.Body.Len()+z.Body.Len() {
		t.Fatalf("held %d answers of %d bytes, want 1 of %d (both encodings)", n, held, plain.Body.Len()+z.Body.Len())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
