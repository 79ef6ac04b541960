package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// gamegate nodes on real Redis topologies through real outages: a
// stopped and a hung server, a Sentinel failover, a Cluster failover, a
// Cluster shard lost whole, and credentials the server refuses. The
// bounds are the ones the storage documents (docs/storage/redis.md):
// a request that needs an unreachable store answers 503 with Retry-After
// within `timeout` (1 s in the examples), and a failover is followed
// within about a second of Redis's own recovery.

const (
	// storeTimeout is the examples' storage timeout.
	storeTimeout = time.Second
	// outageBound is how long a request may take while the store is
	// unreachable: the timeout and a margin for a loaded machine.
	outageBound = storeTimeout + 200*time.Millisecond
	// followBound is how soon after Redis recovers (Sentinel's switch,
	// the cluster's ok) requests succeed again.
	followBound = 3 * time.Second
)

// apiCall is one relay API request and how it went.
type apiCall struct {
	node       string
	path       string
	start, end time.Time
	status     int
	retryAfter string
}

func (c apiCall) took() time.Duration { return c.end.Sub(c.start) }

func (c apiCall) succeeded() bool { return c.status/100 == 2 }

func (c apiCall) String() string {
	return fmt.Sprintf("node %s %s at %s: %d (Retry-After %q) in %v", c.node, c.path, c.start.Format("15:04:05.000"), c.status, c.retryAfter, c.took().Round(time.Millisecond))
}

var apiClients atomic.Uint32

// callAsNewClient sends a relay API POST from a loopback address that no
// other request of this test binary used (127.1.0.0/16), so that the
// per-client limits never refuse it and its rate-limit keys spread over a
// cluster's slots.
func callAsNewClient(t *testing.T, n *node, path, body string) apiCall {
	t.Helper()
	i := apiClients.Add(1)
	ip := net.IPv4(127, 1, byte(i/250%250), byte(i%250+1))
	tr := &http.Transport{
		DialContext:       (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 10 * time.Second}).DialContext,
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	req, err := http.NewRequest("POST", n.http+path, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return apiCall{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clusterToken)
	c := apiCall{node: n.name, path: path, start: time.Now()}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", n.name, path, err)
		return c
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.end, c.status, c.retryAfter = time.Now(), resp.StatusCode, resp.Header.Get("Retry-After")
	return c
}

const allocateBody = `{"maxConnections": 2}`

// load sends /v1/allocate requests to nodes, each from a new client,
// from a few workers at about 20 requests a second, as an operator's
// clients would during a failover.
type load struct {
	mu    sync.Mutex
	calls []apiCall
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startLoad(t *testing.T, nodes ...*node) *load {
	l := &load{stop: make(chan struct{})}
	const workers, every = 4, 200 * time.Millisecond
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := w; ; i++ {
				c := callAsNewClient(t, nodes[i%len(nodes)], "/relay/v1/allocate", allocateBody)
				l.mu.Lock()
				l.calls = append(l.calls, c)
				l.mu.Unlock()
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	t.Cleanup(l.end)
	return l
}

func (l *load) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// snapshot returns the calls so far.
func (l *load) snapshot() []apiCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]apiCall(nil), l.calls...)
}

// firstOKStartedAfter returns the first successful call started after at.
func firstOKStartedAfter(calls []apiCall, at time.Time) (apiCall, bool) {
	var first apiCall
	found := false
	for _, c := range calls {
		if c.succeeded() && c.start.After(at) && (!found || c.end.Before(first.end)) {
			first, found = c, true
		}
	}
	return first, found
}

// checkOutageCalls fails the test for a call that neither succeeded nor
// answered 503 with Retry-After, or that took longer than outageBound,
// and returns how many failed and the slowest failure.
func checkOutageCalls(t *testing.T, calls []apiCall) (failed int, slowest time.Duration) {
	t.Helper()
	for _, c := range calls {
		switch {
		case c.succeeded():
		case c.status == http.StatusServiceUnavailable && c.retryAfter != "":
			failed++
			slowest = max(slowest, c.took())
		default:
			t.Errorf("%v: want 2xx, or 503 with Retry-After", c)
			continue
		}
		if c.took() > outageBound {
			t.Errorf("%v: want at most %v (the storage timeout and a margin)", c, outageBound)
		}
	}
	return failed, slowest
}

// followFailover runs the load on nodes, calls fail (which takes Redis's
// master down and returns once Redis recovered on its own, and when),
// and checks that no request failed otherwise than with a quick 503 and
// that requests succeed within followBound of Redis's recovery.
func followFailover(t *testing.T, what string, nodes []*node, fail func() time.Time) {
	t.Helper()
	l := startLoad(t, nodes...)
	testutil.WaitFor(t, "the load's first successes", func() bool {
		ok := 0
		for _, c := range l.snapshot() {
			if c.succeeded() {
				ok++
			}
		}
		return ok >= 4
	})
	killed := time.Now()
	recovered := fail()
	testutil.WaitForWithin(t, followBound+outageBound+time.Second, "a request started after "+what+" to succeed", func() bool {
		_, ok := firstOKStartedAfter(l.snapshot(), recovered)
		return ok
	})
	l.end()
	calls := l.snapshot()
	failed, slowest := checkOutageCalls(t, calls)
	first, _ := firstOKStartedAfter(calls, recovered)
	if d := first.end.Sub(recovered); d > followBound {
		t.Errorf("the first request to succeed after %s ended %v after it, want within %v: %v", what, d, followBound, first)
	}
	t.Logf("%s %v after the master was killed; %d of %d requests failed (503), the slowest in %v; the first success after %s ended %v after it",
		what, recovered.Sub(killed).Round(time.Millisecond), failed, len(calls), slowest.Round(time.Millisecond), what, first.end.Sub(recovered).Round(time.Millisecond))
}

// With Redis stopped (connections refused) and with Redis hung (its
// process stopped: connections accepted, nothing answered), every relay
// API request that needs it answers 503 with Retry-After within the
// storage timeout and a margin, one at a time and eight at once, on a
// node with GOMAXPROCS=8 (go-redis's pool is 10 connections a CPU, each
// once dialled slowly; a request makes up to four store calls).
func TestClusterRedisOutageBounded(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{})
	prefix := testutil.RedisPrefix(t)
	n := startNodeWith(t, "A", "two-nodes.Caddyfile", prefix, "GAMEGATE_REDIS="+r.Addr, "GOMAXPROCS=8")
	host, err := n.api.Allocate(context.Background(), 2, "")
	if err != nil {
		t.Fatal(err)
	}
	code, err := n.api.JoinCode(context.Background(), host.AllocationID)
	if err != nil {
		t.Fatal(err)
	}
	requests := []struct{ path, body string }{
		{"/relay/v1/allocate", allocateBody},
		{"/relay/v1/joincode", `{"allocationId":"` + host.AllocationID + `"}`},
		{"/relay/v1/join", `{"joinCode":"` + code + `"}`},
	}
	for _, outage := range []struct {
		name       string
		begin, end func(testing.TB)
	}{
		{"stopped", r.Stop, r.Start},
		{"hung", r.Pause, r.Resume},
	} {
		for _, concurrency := range []int{1, 8} {
			// Each round starts with the store answering, its pool full of
			// connections, so that the outage meets them.
			testutil.WaitFor(t, "the store to answer", func() bool {
				return callAsNewClient(t, n, "/relay/v1/allocate", allocateBody).succeeded()
			})
			outage.begin(t)
			var mu sync.Mutex
			var calls []apiCall
			var wg sync.WaitGroup
			for range concurrency {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, req := range requests {
						c := callAsNewClient(t, n, req.path, req.body)
						mu.Lock()
						calls = append(calls, c)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			outage.end(t)
			var slowest time.Duration
			for _, c := range calls {
				if c.status != http.StatusServiceUnavailable || c.retryAfter == "" {
					t.Errorf("Redis %s, %d at once: %v, want 503 with Retry-After", outage.name, concurrency, c)
				}
				if c.took() > outageBound {
					t.Errorf("Redis %s, %d at once: %v, want within %v", outage.name, concurrency, c, outageBound)
				}
				slowest = max(slowest, c.took())
			}
			t.Logf("Redis %s, %d at once: %d requests, the slowest %v", outage.name, concurrency, len(calls), slowest.Round(time.Millisecond))
		}
	}
}

// Behind Sentinel, with the master killed under load: no request fails
// otherwise than with 503 within the timeout, requests succeed within
// 3 s of the Sentinels' switch, and a join code made before the failover
// joins after it.
func TestClusterSentinelFailover(t *testing.T) {
	s := testutil.StartRedisSentinel(t)
	prefix := testutil.RedisPrefix(t)
	env := []string{"GAMEGATE_REDIS_MASTER=" + s.MasterName}
	for i, a := range s.Sentinels {
		env = append(env, fmt.Sprintf("GAMEGATE_SENTINEL_%d=%s", i+1, a))
	}
	a := startNodeWith(t, "A", "two-nodes-sentinel.Caddyfile", prefix, env...)
	b := startNodeWith(t, "B", "two-nodes-sentinel.Caddyfile", prefix, env...)
	_, code, _ := allocateOnAJoinOnB(t, a, b)
	old := s.MasterAddr(t)
	// Replication is asynchronous: the code must be on the replica before
	// the master dies (docs/storage/redis.md says what a failover loses).
	if got := testutil.RedisCLI(t, old, "WAIT", "1", "5000"); got != "1" {
		t.Fatalf("WAIT for the replica: %q", got)
	}
	followFailover(t, "the Sentinels' switch", []*node{a, b}, func() time.Time {
		s.Server(t, old).Stop(t)
		var switched time.Time
		testutil.WaitForWithin(t, 30*time.Second, "the Sentinels to switch to the replica", func() bool {
			switched = time.Now()
			return s.MasterAddr(t) != old
		})
		return switched
	})
	joinAfterFailover(t, b, code)
}

// clusterEnv is the environment of a node of examples/two-nodes-cluster.Caddyfile.
func clusterEnv(c *testutil.RedisCluster) []string {
	var env []string
	for i, a := range c.Addrs()[:3] {
		env = append(env, fmt.Sprintf("GAMEGATE_REDIS_%d=%s", i+1, a))
	}
	return env
}

// shardOf returns the shard that serves slot, as the node at addr sees
// it.
func shardOf(t *testing.T, c *testutil.RedisCluster, addr string, slot int) (testutil.ClusterShard, bool) {
	for _, s := range c.Shards(t, addr) {
		if s.Owns(slot) {
			return s, true
		}
	}
	return testutil.ClusterShard{}, false
}

// On a Cluster, with the master of the records' slot killed under load:
// no request fails otherwise than with 503 within the timeout, requests
// succeed within 3 s of the cluster's ok (the replica promoted), and a
// join code made before the failover joins after it.
func TestClusterRedisClusterFailover(t *testing.T) {
	c := testutil.StartRedisCluster(t)
	prefix := testutil.RedisPrefix(t)
	a := startNodeWith(t, "A", "two-nodes-cluster.Caddyfile", prefix, clusterEnv(c)...)
	b := startNodeWith(t, "B", "two-nodes-cluster.Caddyfile", prefix, clusterEnv(c)...)
	_, code, _ := allocateOnAJoinOnB(t, a, b)
	slot := c.Slot(t, "{"+prefix+"}")
	shard, ok := shardOf(t, c, c.Nodes[0].Addr, slot)
	if !ok || len(shard.Replicas) == 0 {
		t.Fatalf("no master with a replica serves slot %d: %+v", slot, c.Shards(t, c.Nodes[0].Addr))
	}
	if got := testutil.RedisCLI(t, shard.Master, "WAIT", "1", "5000"); got != "1" {
		t.Fatalf("WAIT for the replica: %q", got)
	}
	var witness *testutil.Redis // a live node, asked for the cluster's state
	for _, n := range c.Nodes {
		if n.Addr != shard.Master {
			witness = n
			break
		}
	}
	followFailover(t, "the cluster's ok", []*node{a, b}, func() time.Time {
		c.Node(t, shard.Master).Stop(t)
		var ok time.Time
		testutil.WaitForWithin(t, 30*time.Second, "the replica to be promoted and the cluster ok", func() bool {
			ok = time.Now()
			s, found := shardOf(t, c, witness.Addr, slot)
			if !found || s.Master == shard.Master {
				return false
			}
			info, err := testutil.TryRedisCLI(witness.Addr, "CLUSTER", "INFO")
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		return ok
	})
	joinAfterFailover(t, b, code)
}

// On a Cluster that lost a master and its replica (slots no node
// serves), requests whose records and counts live in the other slots
// still succeed: the rate limits whose keys were in the lost slots fall
// back to the node's own (counted), and no request waits on the lost
// node longer than the timeout.
func TestClusterRedisDeadSlot(t *testing.T) {
	c := testutil.StartRedisCluster(t)
	prefix := testutil.RedisPrefix(t)
	n := startNodeWith(t, "A", "two-nodes-cluster.Caddyfile", prefix, clusterEnv(c)...)
	shards := c.Shards(t, c.Nodes[0].Addr)
	records, pools := c.Slot(t, "{"+prefix+"}"), c.Slot(t, "{"+prefix+":pools}")
	var dead *testutil.ClusterShard
	for i, s := range shards {
		if !s.Owns(records) && !s.Owns(pools) {
			dead = &shards[i]
			break
		}
	}
	if dead == nil {
		t.Fatalf("every shard holds the records or the counts: %+v", shards)
	}
	host, err := n.api.Allocate(context.Background(), 2, "")
	if err != nil {
		t.Fatal(err)
	}
	fallbacks := metricOf(t, n, `gamegate_relay_api_local_limit_decisions_total{limit="rate"}`)
	c.Node(t, dead.Master).Stop(t)
	for _, r := range dead.Replicas {
		c.Node(t, r).Stop(t)
	}
	var calls []apiCall
	for range 20 {
		calls = append(calls, callAsNewClient(t, n, "/relay/v1/allocate", allocateBody))
	}
	code, err := n.api.JoinCode(context.Background(), host.AllocationID)
	if err != nil {
		t.Fatalf("join code with a shard lost: %v", err)
	}
	calls = append(calls, callAsNewClient(t, n, "/relay/v1/join", `{"joinCode":"`+code+`"}`))
	for _, c := range calls {
		if !c.succeeded() || c.took() > outageBound {
			t.Errorf("with the shard of other slots lost: %v, want 2xx within %v", c, outageBound)
		}
	}
	// About a third of the new clients' rate keys were in the lost slots.
	local := metricOf(t, n, `gamegate_relay_api_local_limit_decisions_total{limit="rate"}`) - fallbacks
	if local < 1 {
		t.Fatalf("local rate decisions with a shard lost: %v, want some (the test must reach the lost slots)", local)
	}
	var slowest time.Duration
	for _, c := range calls {
		slowest = max(slowest, c.took())
	}
	t.Logf("a shard lost whole: %d requests succeeded, the slowest in %v; %v rate decisions taken locally", len(calls), slowest.Round(time.Millisecond), local)
}

// Credentials or rights the server refuses stop a node at start with a
// message naming the address and Redis's answer, rather than a node that
// answers 503 forever; the ACL rules docs/storage/redis.md lists are
// enough for a node to work.
func TestClusterRedisMisconfiguration(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{Args: []string{"--requirepass", "right-password"}})
	prefix := testutil.RedisPrefix(t)
	refused := func(password, want string) {
		t.Helper()
		n := launchNode(t, "A", "two-nodes.Caddyfile", prefix, "GAMEGATE_REDIS="+r.Addr, "GAMEGATE_REDIS_PASSWORD="+password)
		select {
		case <-n.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("a node with %s did not stop at start", want)
		}
		out := n.out.String()
		if !strings.Contains(out, r.Addr) || !strings.Contains(out, want) {
			t.Fatalf("a node with %s: want a startup error naming %s and %s, got:\n%s", want, r.Addr, want, out)
		}
	}
	refused("wrong-password", "WRONGPASS")
	refused("", "NOAUTH")
	// An administrator, for the rules below (default loses ACL).
	testutil.RedisCLI(t, r.Addr, "--no-auth-warning", "-a", "right-password", "ACL", "SETUSER", "admin", "on", ">admin-password", "~*", "&*", "+@all")
	cli := func(args ...string) {
		if out := testutil.RedisCLI(t, r.Addr, append([]string{"--no-auth-warning", "--user", "admin", "--pass", "admin-password"}, args...)...); out != "OK" {
			t.Fatalf("redis-cli %v: %s", args, out)
		}
	}
	// A user without TIME would take every rate decision locally
	// (Redis 7.0 says so in an ERR reply rather than NOPERM).
	cli("ACL", "SETUSER", "default", "-time")
	refused("right-password", "The user executing the script can't run this command")

	// The rules of docs/storage/redis.md, for this prefix.
	rules := append([]string{"ACL", "SETUSER", "default", "reset", "on", ">right-password"}, strings.Fields(strings.ReplaceAll(aclRulesFromDocs(t), "gamegate", prefix))...)
	cli(rules...)
	a := startNodeWith(t, "A", "two-nodes.Caddyfile", prefix, "GAMEGATE_REDIS="+r.Addr, "GAMEGATE_REDIS_PASSWORD=right-password")
	b := startNodeWith(t, "B", "two-nodes.Caddyfile", prefix, "GAMEGATE_REDIS="+r.Addr, "GAMEGATE_REDIS_PASSWORD=right-password")
	allocateOnAJoinOnB(t, a, b)
	if status, _, body := clusterRequest(t, "PUT", a.admin+"/qos-discovery/default/fleets/"+clusterFleet,
		`{"servers": [{"region_id": "acl", "ipv4": "198.51.100.9", "port": 9900}]}`); status != http.StatusNoContent {
		t.Fatalf("admin PUT as the documented ACL user: got %d %s", status, body)
	}
	testutil.WaitFor(t, "node B to serve the change", func() bool {
		_, _, body := clusterRequest(t, "GET", b.http+"/v1/fleets/"+clusterFleet+"/servers", "")
		return strings.Contains(body, "198.51.100.9")
	})
	if strings.Contains(a.out.String(), "NOPERM") || strings.Contains(b.out.String(), "NOPERM") {
		t.Fatalf("a command the documented rules refuse:\n%s\n%s", a.out.String(), b.out.String())
	}

	// A right taken away while the nodes run: 500, not 503 (nothing a
	// client can wait out), and one log line, not one per request.
	cli("ACL", "SETUSER", "default", "-evalsha", "-eval")
	for range 3 {
		if c := callAsNewClient(t, a, "/relay/v1/allocate", allocateBody); c.status != http.StatusInternalServerError {
			t.Fatalf("allocate with EVAL refused: %v, want 500", c)
		}
	}
	if n := strings.Count(a.out.String(), "storage redis: the server refuses"); n != 1 {
		t.Fatalf("the refusal was logged %d times, want once:\n%s", n, a.out.String())
	}
}

// aclRulesFromDocs returns the ACL rules in docs/storage/redis.md's
// `ACL SETUSER` example, after the user's name and password.
func aclRulesFromDocs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/storage/redis.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ACL SETUSER gamegate on >"); ok {
			_, rules, _ := strings.Cut(rest, " ")
			return rules
		}
	}
	t.Fatal("docs/storage/redis.md has no ACL SETUSER gamegate on >... line")
	return ""
}

// joinAfterFailover joins code on n once the store has followed a
// failover: each node keeps its own record of the store's health, so n
// may answer 503 + Retry-After for up to a second after another node's
// first success; the code must then join, not be gone. Each try comes
// from a new client, a tenth of a second apart, as clients that honour
// Retry-After would.
func joinAfterFailover(t *testing.T, n *node, code string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := callAsNewClient(t, n, "/relay/v1/join", `{"joinCode":"`+code+`"}`)
		switch {
		case c.succeeded():
			return
		case c.status != http.StatusServiceUnavailable || time.Now().After(deadline):
			t.Fatalf("join after the failover of a code made before it: %v", c)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
