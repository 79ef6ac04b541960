package master

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/store/redisstore"
)

// Two masters (two nodes) sharing one redis-server: a server proven on one
// is listed by the other; over max_servers_per_address counted on both,
// the node that took the registration drops it; Unshare stops the poller.
func TestSharedRegistry(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	prefix := testutil.RedisPrefix(t)
	newNode := func() *rig {
		s := redisstore.New(redisstore.Config{Addresses: []string{r.Addr}, KeyPrefix: prefix})
		t.Cleanup(func() { s.Close() })
		reg := NewRegistry(nil)
		reg.Share(s, "master:test", nil, nil)
		t.Cleanup(reg.Unshare)
		n := &rig{t: t, clock: testutil.NewClock(time.Now())}
		m, err := New(Config{Registry: reg, HeartbeatRate: 1e6, MaxServersPerAddress: 3,
			Count: func(v Verdict) { n.counts[v]++ }})
		if err != nil {
			t.Fatal(err)
		}
		n.m = m
		return n
	}
	a, b := newNode(), newNode()
	a.register("127.0.0.1:1", `\hostname\Shared`)
	testutil.WaitFor(t, "node B to list node A's server", func() bool {
		s := b.m.Registry().Servers(nil)
		return len(s) == 1 && s[0].Addr == netip.MustParseAddrPort("127.0.0.1:1") && string(s[0].Info) == `\hostname\Shared\mapname\oa_dm1\gamename\Quake3Arena\protocol\71\clients\1\sv_maxclients\8`
	})
	// Three per address over both nodes: 127.0.0.1:1 on A, then two more
	// on A and two on B; each node keeps only what the store took.
	for i := 2; i <= 3; i++ {
		a.register(fmt.Sprintf("127.0.0.1:%d", i), "")
	}
	testutil.WaitFor(t, "node B to list node A's three servers", func() bool { return len(b.m.Registry().Servers(nil)) == 3 })
	for i := 4; i <= 5; i++ {
		b.register(fmt.Sprintf("127.0.0.1:%d", i), "")
	}
	testutil.WaitFor(t, "node B to drop what the store refused", func() bool {
		n, _ := b.m.Registry().Len()
		return n == 3
	})
	if n, _ := a.m.Registry().Len(); n != 3 {
		t.Fatalf("node A lists %d servers, want 3", n)
	}
}
