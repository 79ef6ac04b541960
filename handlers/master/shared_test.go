package master

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/store"
	"github.com/gamegate/gamegate/store/redisstore"
)

// Two masters (two nodes) sharing one redis-server: a server proven on one
// is listed by the other; over max_servers_per_address counted on both,
// the node that took the registration drops it; Unshare stops the poller.
func TestSharedRegistry(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	prefix := testutil.RedisPrefix(t)
	newNode := func() *rig {
		return sharingNode(t, r.Addr, prefix, Config{MaxServersPerAddress: 3, SharedNetworks: []string{"127.0.0.0/8"}})
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

// sharingNode is a master sharing its list through the redis-server at
// addr, under prefix, with cfg.
func sharingNode(t *testing.T, addr, prefix string, cfg Config) *rig {
	t.Helper()
	s := redisstore.New(redisstore.Config{Addresses: []string{addr}, KeyPrefix: prefix})
	t.Cleanup(func() { s.Close() })
	reg := NewRegistry(nil)
	reg.Share(s, "master:test", nil, nil)
	t.Cleanup(reg.Unshare)
	cfg.Registry, cfg.HeartbeatRate = reg, 1e6
	return newRig(t, cfg)
}

// A node lists a server another node proved only at an address that names
// the same host from every node: a public one, or one in its
// shared_networks. A loopback or private address is the other node's.
func TestSharedRegistryAdoptsOnlySharedAddresses(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	prefix := testutil.RedisPrefix(t)
	a := sharingNode(t, r.Addr, prefix, Config{})
	b := sharingNode(t, r.Addr, prefix, Config{SharedNetworks: []string{"10.1.0.0/16", "fd00::/8"}})
	c := sharingNode(t, r.Addr, prefix, Config{})
	// The public one is registered once the store holds the others: the
	// nodes read the store's changes in the order they were written, so
	// a node that lists it has read the others too. (One write round
	// writes its registrations in no set order.)
	for _, src := range []string{"127.0.0.1:27960", "10.1.2.3:27960", "10.2.0.1:27960", "192.168.1.1:27960",
		"169.254.1.1:27960", "[fd00::1]:27960", "[::1]:27960"} {
		a.register(src, "")
	}
	reader := redisstore.New(redisstore.Config{Addresses: []string{r.Addr}, KeyPrefix: prefix})
	t.Cleanup(func() { reader.Close() })
	testutil.WaitFor(t, "node A to write its seven servers to the store", func() bool {
		servers, _, _, err := reader.ServerChanges(context.Background(), "master:test", store.ListCursor{}, 100)
		return err == nil && len(servers) == 7
	})
	a.register("192.0.2.1:27960", "")
	if n, _ := a.m.Registry().Len(); n != 8 {
		t.Fatalf("node A lists %d servers of its own, want 8", n)
	}
	listed := func(n *rig) []string {
		var out []string
		for _, s := range n.m.Registry().Servers(nil) {
			out = append(out, s.Addr.String())
		}
		return sorted(out)
	}
	for _, tc := range []struct {
		node *rig
		want []string
	}{
		{b, []string{"10.1.2.3:27960", "192.0.2.1:27960", "[fd00::1]:27960"}},
		{c, []string{"192.0.2.1:27960"}},
	} {
		testutil.WaitFor(t, "the node to list node A's public server", func() bool {
			return slices.Contains(listed(tc.node), "192.0.2.1:27960")
		})
		if got := listed(tc.node); !slices.Equal(got, tc.want) {
			t.Errorf("listed %v, want %v", got, tc.want)
		}
	}
}
