package tests

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// nodeServers returns what node n's /servers/ lists, by address.
func nodeServers(t *testing.T, n *node) map[string]listedServer {
	t.Helper()
	var p listedPage
	if r := getJSON(t, n.http+"/servers/", &p); r.status != 200 {
		t.Fatalf("node %s /servers/: %d %s", n.name, r.status, r.body)
	}
	out := map[string]listedServer{}
	for _, s := range p.Servers {
		out[s.Address] = s
	}
	return out
}

// listSources counts the sources of nodeMasterList: each asks from a
// loopback address of its own, so that the master's list_rate never
// leaves one unanswered.
var listSources atomic.Int32

// nodeMasterList asks node n's master for its list (OpenArena's protocol,
// 71); an unanswered request fails the test.
func nodeMasterList(t *testing.T, n *node) []string {
	t.Helper()
	i := listSources.Add(1)
	from := fmt.Sprintf("127.0.%d.%d:0", 10+i/250, 1+i%250)
	got, datagrams, _ := masterList(t, testutil.DialUDP(t, from, n.master), "getservers 71 empty full")
	if datagrams == 0 {
		t.Fatalf("node %s's master did not answer from %s", n.name, from)
	}
	return got
}

// With storage redis, the master's list is shared: a real OpenArena
// server heartbeating to node A is listed by node B (qstat reads B's
// master; B's /servers/ shows its map and bots) and leaves both lists at
// its expiry. While Redis is stopped, a server registering with A is
// listed by A alone; once Redis is back, B lists it too, without a
// restart, and A says so in its log. max_servers_per_address counts the
// servers of both nodes.
func TestClusterMasterListShared(t *testing.T) {
	testutil.RequireDebianPeer(t, "/usr/bin/quakestat", "qstat")
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	prefix := testutil.RedisPrefix(t)
	a := startNode(t, "A", r.Addr, prefix)
	b := startNode(t, "B", r.Addr, prefix)

	bots := []string{"Sarge", "Grism"}
	oa := testutil.StartOpenArenaWithMaster(t, a.master, "^1Shared ^7Arena", 8, bots...)
	registeredBy := time.Now() // it registered at most now
	var s listedServer
	testutil.WaitFor(t, "node B's /servers/ to list the server with its bots", func() bool {
		var ok bool
		s, ok = nodeServers(t, b)[oa.Addr]
		return ok && len(s.Bots) == len(bots)
	})
	if s.Name != "Shared Arena" || s.Map != oa.Map || s.NumPlayers != len(bots) || s.Game != "OpenArena" {
		t.Fatalf("node B lists %+v", s)
	}
	count, online := quakestatMaster(t, "-openarenam", b.master)
	if count != 1 || !slices.Equal(online, []string{oa.Addr}) {
		t.Fatalf("quakestat -openarenam %s (node B): %d servers, online %v; want 1, [%s]", b.master, count, online, oa.Addr)
	}
	if got := nodeMasterList(t, a); !slices.Equal(got, []string{oa.Addr}) {
		t.Fatalf("node A's master lists %v", got)
	}

	// Stopped, it leaves every node's list at its expiry.
	oa.Stop()
	testutil.WaitForWithin(t, clusterMasterExpiry+15*time.Second, "the server to leave both lists", func() bool {
		return len(nodeMasterList(t, a)) == 0 && len(nodeMasterList(t, b)) == 0 &&
			len(nodeServers(t, b)) == 0
	})
	if time.Since(registeredBy) < clusterMasterExpiry-2*time.Second {
		t.Fatalf("left the list %v after registering, before its expiry of %v", time.Since(registeredBy), clusterMasterExpiry)
	}

	// Redis stopped: node A lists what registers with it; node B cannot
	// know.
	r.Stop(t)
	fake := fakeServer(t, a.master, "127.0.0.5", `\sv_maxclients\8\clients\1\protocol\71\hostname\Alone`)
	fakeAddr := fake.Conn.LocalAddr().String()
	testutil.WaitFor(t, "node A to list the server registered during the outage", func() bool {
		return slices.Equal(nodeMasterList(t, a), []string{fakeAddr})
	})
	if got := nodeMasterList(t, b); len(got) != 0 {
		t.Fatalf("node B lists %v with Redis stopped", got)
	}
	testutil.WaitFor(t, "node A to log and count the outage", func() bool {
		return strings.Contains(a.out.String(), "the shared store cannot be reached") &&
			metricOf(t, a, "gamegate_master_shared_store_failures_total") > 0
	})

	// Redis back: node A writes what it kept, node B lists it.
	r.Start(t)
	testutil.WaitFor(t, "node B to list the server registered during the outage", func() bool {
		return slices.Equal(nodeMasterList(t, b), []string{fakeAddr})
	})
	testutil.WaitFor(t, "node A to log the end of the outage", func() bool {
		return strings.Contains(a.out.String(), "the list is shared again")
	})

	// The limits count every node's registrations: of 40 servers on one
	// IP address, 20 registering with each node, every node lists
	// max_servers_per_address (32 by default).
	for range 20 {
		fakeServer(t, a.master, "127.0.0.7", `\sv_maxclients\8\clients\1\protocol\71`)
		fakeServer(t, b.master, "127.0.0.7", `\sv_maxclients\8\clients\1\protocol\71`)
	}
	from7 := func(n *node) int {
		c := 0
		for _, s := range nodeMasterList(t, n) {
			if strings.HasPrefix(s, "127.0.0.7:") {
				c++
			}
		}
		return c
	}
	var na, nb int
	testutil.WaitFor(t, "both nodes to list 32 servers of 127.0.0.7", func() bool {
		na, nb = from7(a), from7(b)
		return na == 32 && nb == 32
	})
}
