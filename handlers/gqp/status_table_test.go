package gqp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
)

// TestCommandHTTPStatusTable checks the table of docs/handlers/game_query.md
// ("Errors") of how a GQP answer becomes the gateway's HTTP status, each
// row against a real server on a socket answering the command with that
// status.
func TestCommandHTTPStatusTable(t *testing.T) {
	reply := func(status int) func([]byte) [][]byte {
		return func([]byte) [][]byte { return [][]byte{fmt.Appendf(nil, "%02decho\x1e\x06\x04", status)} }
	}
	tests := []struct {
		name   string
		answer func(q []byte) [][]byte
		want   int
	}{
		{"10 ok", reply(10), http.StatusOK},
		{"20 unknown command", reply(20), http.StatusNotFound},
		{"21 unsupported feature", reply(21), http.StatusNotImplemented},
		{"40 unsupported encoding", reply(40), http.StatusNotImplemented},
		{"22 wrong argument count", reply(22), http.StatusBadRequest},
		{"23 invalid argument", reply(23), http.StatusBadRequest},
		{"30 disabled", reply(30), http.StatusForbidden},
		{"32 unauthorised", reply(32), http.StatusForbidden},
		{"31 unavailable", reply(31), http.StatusServiceUnavailable},
		{"41 decode error", reply(41), http.StatusBadGateway},
		{"malformed", func([]byte) [][]byte { return [][]byte{[]byte("\x00\xffnot gqp\x04")} }, http.StatusBadGateway},
		{"no answer", func([]byte) [][]byte { return nil }, http.StatusGatewayTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveFunc(t, func(_ netip.AddrPort, q []byte) [][]byte { return tt.answer(q) })
			// Only the row without an answer waits for the timeout; the
			// others must not meet it on a busy machine.
			timeout := 10 * time.Second
			if tt.want == http.StatusGatewayTimeout {
				timeout = 200 * time.Millisecond
			}
			p := &QueryProtocol{Client: &Client{Timeout: timeout, Retries: -1}}
			_, err := p.Command(context.Background(), addr, "echo", nil)
			got := http.StatusOK
			if err != nil {
				got = query.HTTPStatus(err)
			}
			if got != tt.want {
				t.Fatalf("got HTTP %d (%v), want %d", got, err, tt.want)
			}
			// Each error comes with a body in words (the error's message).
			var qe *query.Error
			if err != nil && (!errors.As(err, &qe) || len(strings.Fields(qe.Message)) < 2) {
				t.Fatalf("error %#v: want a *query.Error whose message says in words what happened", err)
			}
		})
	}
}
