package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/store"
	"github.com/gamegate/gamegate/store/redisstore"
)

// Two nodes on one prefix share one list: what one registers the other
// reads, once, from its cursor on; the limits count both nodes'
// registrations; a server expires for both.
func TestSharedList(t *testing.T) {
	ctx := context.Background()
	a := newStore(t, redisstore.Config{})
	b := newStore(t, redisstore.Config{KeyPrefix: a.KeyPrefix()[1 : len(a.KeyPrefix())-1]})
	reg := func(s *redisstore.Store, addr string, expiry time.Duration) int {
		t.Helper()
		n, err := s.RegisterServer(ctx, "m", addr, []byte("v"+addr), expiry, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		s    *redisstore.Store
		addr string
		want int
	}{
		{a, "192.0.2.1:1", store.Registered},
		{b, "192.0.2.1:2", store.Registered},
		{a, "192.0.2.1:3", store.ListAddressFull}, // two from 192.0.2.1 already, over both nodes
		{b, "192.0.2.1:1", store.Refreshed},
		{b, "[2001:db8::1]:4", store.Registered},
		{a, "192.0.2.9:5", store.ListFull}, // three in all
	} {
		if got := reg(tc.s, tc.addr, time.Minute); got != tc.want {
			t.Fatalf("register %s: got %d, want %d", tc.addr, got, tc.want)
		}
	}
	servers, cur, more, err := b.ServerChanges(ctx, "m", store.ListCursor{}, 2)
	if err != nil || len(servers) != 2 || !more {
		t.Fatalf("first page: %v %v more=%v", servers, err, more)
	}
	rest, cur, more, err := b.ServerChanges(ctx, "m", cur, 2)
	if err != nil || len(rest) != 1 || more {
		t.Fatalf("second page: %v %v more=%v", rest, err, more)
	}
	got := map[string]string{}
	for _, s := range append(servers, rest...) {
		if s.TTL <= 0 || s.TTL > time.Minute {
			t.Fatalf("%s: TTL %v", s.Addr, s.TTL)
		}
		got[s.Addr] = string(s.Value)
	}
	if len(got) != 3 || got["[2001:db8::1]:4"] != "v[2001:db8::1]:4" {
		t.Fatalf("read %v", got)
	}
	// Nothing new: nothing read.
	if none, _, _, err := a.ServerChanges(ctx, "m", cur, 10); err != nil || len(none) != 0 {
		t.Fatalf("no change since: read %v, %v", none, err)
	}
	// A short registration expires for every node, and makes room.
	if n := reg(a, "192.0.2.1:1", 50*time.Millisecond); n != store.Refreshed {
		t.Fatalf("refresh: %d", n)
	}
	testutil.WaitFor(t, "the expiry to make room", func() bool {
		n := reg(b, "192.0.2.1:3", time.Minute)
		if n != store.Registered && n != store.ListFull {
			t.Fatalf("register: %d", n)
		}
		return n == store.Registered
	})
	all, _, _, err := b.ServerChanges(ctx, "m", store.ListCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Addr == "192.0.2.1:1" {
			t.Fatalf("expired server still read: %v", s)
		}
	}
	// A list lost by the store (its epoch gone) is read anew from the
	// start by a node whose cursor is of the old one.
	if len(all) != 3 {
		t.Fatalf("read %d servers, want 3", len(all))
	}
	cur2 := store.ListCursor{Epoch: "lost", Seq: 1 << 40}
	if again, _, _, err := b.ServerChanges(ctx, "m", cur2, 10); err != nil || len(again) != 3 {
		t.Fatalf("with another epoch's cursor: read %d, %v; want all 3", len(again), err)
	}
}

// With no server, ServerChanges and RegisterServer fail within the
// timeout with ErrUnavailable.
func TestSharedListUnreachable(t *testing.T) {
	s := redisstore.New(redisstore.Config{Addresses: []string{"127.0.0.1:1"}, Timeout: duration.Duration(200 * time.Millisecond)})
	defer s.Close()
	start := time.Now()
	_, err := s.RegisterServer(context.Background(), "m", "192.0.2.1:1", []byte("v"), time.Minute, 1, 1)
	if err == nil || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("register: %v", err)
	}
	if _, _, _, err := s.ServerChanges(context.Background(), "m", store.ListCursor{}, 1); err == nil || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("changes: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}
