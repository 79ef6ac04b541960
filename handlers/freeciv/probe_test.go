package freeciv

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gamegate/gamegate/handlers/query"
)

// The lan command where lan_group is not configured is a 404 that says
// so, not one denying that the command exists; an unknown command names
// the ones there are. Neither sends anything.
func TestCommandsWithoutLAN(t *testing.T) {
	q := &QueryProtocol{}
	for _, tc := range []struct{ command, says, not string }{
		{"lan", "lan_group", "has no command"},
		{"frob", `has no command "frob"`, ""},
	} {
		_, err := q.Command(context.Background(), "192.0.2.1:5556", tc.command, nil)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.HTTPStatus != http.StatusNotFound || !strings.Contains(qe.Message, tc.says) ||
			tc.not != "" && strings.Contains(qe.Message, tc.not) {
			t.Errorf("%s: got %v, want a 404 saying %q", tc.command, err, tc.says)
		}
	}
}
