package caddygqp

import (
	"context"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/handlers/gqp"
)

func TestGQPProvisionRefusesEmptyPasswords(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	for _, pw := range []string{"", "{env.GAMEGATE_TEST_SURELY_UNSET_PASSWORD}"} {
		h := &GQPResponder{Config: gqp.Config{Logins: map[string]string{"admin": pw}}}
		err := h.Provision(ctx)
		// Caddy names the module before the error: it starts with the login.
		if err == nil || !strings.HasPrefix(err.Error(), `login "admin": `) || !strings.Contains(err.Error(), "is empty after replacing placeholders") {
			t.Fatalf("password %q: got %v, want an error starting with the login", pw, err)
		}
	}
	t.Setenv("GAMEGATE_TEST_GQP_PW", "hunter2")
	h := &GQPResponder{Config: gqp.Config{Logins: map[string]string{"admin": "{env.GAMEGATE_TEST_GQP_PW}"}}}
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("a password from the environment: got %v", err)
	}
}
