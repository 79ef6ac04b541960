package farmingsimulator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
)

const token = "s3cr3t-feed-token"

// The token reaches the server and nothing else: not the answer's error
// nor its detail (what the gateway logs), whatever fails.
func TestTokenNeverShown(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Query().Get("code"))
		switch r.URL.Path {
		case "/feed/dedicated-server-stats.xml":
			http.Redirect(w, r, "http://127.0.0.2:1/elsewhere?code="+token, http.StatusFound)
		}
	}))
	addr := strings.TrimPrefix(srv.URL, "http://")
	p, err := (&Config{Token: token, HTTPAttempts: query.HTTPAttempts{Attempts: query.Attempts{Retries: -1}}}).NewProtocol()
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var e *query.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: got %v, want a *query.Error", what, err)
		}
		if all := e.Message + " " + fmt.Sprint(e.Detail); strings.Contains(all, token) {
			t.Errorf("%s: the error shows the token: %s", what, all)
		}
	}
	_, err = p.Status(context.Background(), addr)
	check("a redirect", err)
	srv.Close()
	_, err = p.Status(context.Background(), addr)
	check("a closed port", err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	_, err = p.Status(ctx, addr)
	check("a timeout", err)
	if len(got) != 1 || got[0] != token {
		t.Errorf("the server was sent %q, want the token once", got)
	}
}

func TestConfigNeedsToken(t *testing.T) {
	if err := (&Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("no token: %v", err)
	}
	p, _ := (&Config{}).NewProtocol()
	if _, err := p.Status(context.Background(), "127.0.0.1:1"); query.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("a status without a token: %v, want 403", err)
	}
}
