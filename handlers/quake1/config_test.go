package quake1

import (
	"context"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// The configuration builds the QuakeWorld dialect: it reads a QuakeWorld
// answer, which the Quake 2 dialect drops.
func TestNewProtocolIsQuakeWorld(t *testing.T) {
	s := testutil.ExampleQuakeWorld()
	testutil.StartQuake(t, s)
	c := Config{Attempts: query.Attempts{AttemptTimeout: duration.Duration(2 * time.Second)}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := c.NewProtocol()
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Status(context.Background(), s.Addr)
	if err != nil || p.Name() != "quake1" || st.Protocol != "quake1" || st.Map != "dm4" || len(st.Players) != 2 {
		t.Fatalf("got %+v, %v", st, err)
	}
	if err := (&Config{Attempts: query.Attempts{Retries: 11}}).Validate(); err == nil {
		t.Error("retries 11: got no error")
	}
}
