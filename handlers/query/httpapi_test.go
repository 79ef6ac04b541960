package query

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A redirect is an unusable answer, never followed: the other host is not
// asked, and the answer names neither it nor the path.
func TestHTTPAPIRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer other.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/internal", http.StatusFound)
	}))
	defer target.Close()
	api := NewHTTPAPI(time.Second, -1, 0)
	addr := strings.TrimPrefix(target.URL, "http://")
	_, _, err := api.Get(context.Background(), addr, "/info.json?code=secret")
	var e *Error
	if !errors.As(err, &e) || e.Kind() != TypeBadAnswer {
		t.Fatalf("got %v, want a bad_answer error", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's host was asked %d times", n)
	}
	for _, s := range []string{other.URL, "internal", "secret", addr} {
		if strings.Contains(e.Message, s) {
			t.Errorf("the answer %q names %q", e.Message, s)
		}
	}
}

// A body over the bound is refused having read at most the bound and a
// byte, whether its length is announced or not.
func TestHTTPAPIBodyBounded(t *testing.T) {
	const bound = 4096
	for _, announced := range []bool{true, false} {
		var sent atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 64<<10)
			if announced {
				w.Header().Set("Content-Length", "67108864")
			}
			for range 1024 { // 64 MiB
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		api := NewHTTPAPI(5*time.Second, -1, bound)
		body, _, err := api.Get(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "/players.json")
		srv.Close()
		if !errors.Is(err, ErrTooLarge) || body != nil {
			t.Errorf("announced %v: got %d bytes, %v; want ErrTooLarge", announced, len(body), err)
		}
		if n := sent.Load(); n >= 64<<20 {
			t.Errorf("announced %v: the whole %d-byte body was sent", announced, n)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, bound))
	}))
	defer srv.Close()
	if body, _, err := NewHTTPAPI(time.Second, -1, bound).Get(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "/"); err != nil || len(body) != bound {
		t.Errorf("a body of exactly the bound: %d bytes, %v", len(body), err)
	}
}

// The client connects to the address it is given and no other: a URL
// whose host differs is refused before any connection.
func TestHTTPAPIDialsOnlyTheTarget(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	ctx := context.WithValue(context.Background(), targetKey{}, "127.0.0.1:1")
	if _, err := dialTarget(ctx, "tcp", strings.TrimPrefix(srv.URL, "http://")); err == nil {
		t.Fatal("a connection to an address other than the target was made")
	}
	if _, err := dialTarget(context.Background(), "tcp", strings.TrimPrefix(srv.URL, "http://")); err == nil {
		t.Fatal("a connection without a target was made")
	}
	if hits.Load() != 0 {
		t.Errorf("the other address was asked")
	}
}

// A slow server is a timeout after every attempt, within the attempts'
// time; a refused port is answered at once, without the OS's words.
func TestHTTPAPIFailures(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	_, _, err := NewHTTPAPI(100*time.Millisecond, 1, 0).Get(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "/")
	var e *Error
	if !errors.As(err, &e) || e.Kind() != TypeTimeout {
		t.Errorf("a server that does not answer: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("two attempts of 100ms took %v", d)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()
	_, _, err = NewHTTPAPI(time.Second, 1, 0).Get(context.Background(), addr, "/")
	if !errors.As(err, &e) || e.Kind() != TypeRefused || strings.Contains(e.Message, "connection refused") || strings.Contains(e.Message, addr) {
		t.Errorf("a closed port: %v (%v)", err, e)
	}
}
