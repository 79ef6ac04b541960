package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
)

// Several gamegate processes (built from cmd/gamegate, run from
// examples/two-nodes.Caddyfile) sharing one redis-server, as a studio runs
// them behind one name.

const (
	clusterSecret = "cluster-test-relay-secret-0123456789"
	clusterToken  = "cluster-test-token"
	clusterFleet  = "example-fleet"
	// clusterMasterExpiry is the nodes' master expiry: short, so that a
	// test sees a server leave the list.
	clusterMasterExpiry = 20 * time.Second
)

var (
	clusterBinOnce sync.Once
	clusterBinDir  string
	clusterBin     string
	clusterBinErr  error
)

// gamegateBinary builds cmd/gamegate once per test binary; TestMain
// removes it.
func gamegateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs gamegate processes")
	}
	clusterBinOnce.Do(func() {
		if clusterBinDir, clusterBinErr = os.MkdirTemp("", "gamegate-cluster-bin-"); clusterBinErr != nil {
			return
		}
		clusterBin = filepath.Join(clusterBinDir, "gamegate")
		out, err := exec.Command("go", "build", "-o", clusterBin, "github.com/gamegate/gamegate/cmd/gamegate").CombinedOutput()
		if err != nil {
			clusterBinErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if clusterBinErr != nil {
		t.Fatalf("building gamegate: %v", clusterBinErr)
	}
	return clusterBin
}

// node is a gamegate process.
type node struct {
	name   string
	http   string // http://127.0.0.1:port
	admin  string // http://127.0.0.1:port
	qos    string // UDP host:port
	relay  string // UDP host:port, also its public address
	master string // UDP host:port
	api    *relay.APIClient
	out    *bytes.Buffer
	cmd    *exec.Cmd
	exited chan struct{}
}

// startNode runs a gamegate process from examples/two-nodes.Caddyfile on
// redisAddr under prefix, and returns once it serves HTTP.
func startNode(t *testing.T, name, redisAddr, prefix string) *node {
	t.Helper()
	return startNodeWith(t, name, "two-nodes.Caddyfile", prefix, "GAMEGATE_REDIS="+redisAddr)
}

// startNodeWith runs a gamegate process from the named file of examples/
// under prefix, with more environment variables (its Redis), and returns
// once it serves HTTP.
func startNodeWith(t *testing.T, name, example, prefix string, env ...string) *node {
	t.Helper()
	n := launchNode(t, name, example, prefix, env...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := httpClient.Get(n.http + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		select {
		case <-n.exited:
			t.Fatalf("node %s exited at start:\n%s", name, n.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s did not serve HTTP within 60 s:\n%s", name, n.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// launchNode starts a gamegate process as startNodeWith does, without
// waiting for it.
func launchNode(t *testing.T, name, example, prefix string, env ...string) *node {
	t.Helper()
	bin := gamegateBinary(t)
	_, file, _, _ := runtime.Caller(0)
	config := filepath.Join(filepath.Dir(file), "..", "examples", example)
	n := &node{name: name, qos: testutil.FreeUDPAddr(t), relay: testutil.FreeUDPAddr(t), master: testutil.FreeUDPAddr(t),
		out: &bytes.Buffer{}, exited: make(chan struct{})}
	httpAddr, adminAddr := testutil.FreeTCPAddr(t), testutil.FreeTCPAddr(t)
	n.http, n.admin = "http://"+httpAddr, "http://"+adminAddr
	n.api = &relay.APIClient{Base: n.http + "/relay", Token: clusterToken}
	_, httpPort, _ := strings.Cut(httpAddr, ":")
	dir := t.TempDir()
	n.cmd = exec.Command(bin, "run", "--config", config, "--adapter", "caddyfile")
	n.cmd.Env = append(os.Environ(),
		"HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir,
		"GAMEGATE_ADMIN="+adminAddr,
		"GAMEGATE_REDIS_PREFIX="+prefix,
		"GAMEGATE_HTTP_PORT="+httpPort,
		"GAMEGATE_QOS_LISTEN="+n.qos,
		"GAMEGATE_RELAY_LISTEN="+n.relay,
		"GAMEGATE_MASTER_LISTEN="+n.master,
		"GAMEGATE_MASTER_EXPIRY="+clusterMasterExpiry.String(),
		"GAMEGATE_RELAY_PUBLIC="+n.relay,
		"GAMEGATE_QOS_PUBLIC_A=192.0.2.1:9000",
		"GAMEGATE_QOS_PUBLIC_B=192.0.2.2:9000",
		"GAMEGATE_RELAY_SECRET="+clusterSecret,
		"GAMEGATE_RELAY_TOKEN="+clusterToken,
	)
	n.cmd.Env = append(n.cmd.Env, env...)
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.exited
		}
		if t.Failed() || os.Getenv("GAMEGATE_TEST_LOG") != "" {
			t.Logf("node %s output:\n%s", n.name, n.out.String())
		}
	})
	return n
}

// clusterRequest sends a request to a node and returns its status,
// headers and body.
func clusterRequest(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// allocateOnAJoinOnB makes a host allocation and its join code on a and
// joins it on b.
func allocateOnAJoinOnB(t *testing.T, a, b *node) (host *relay.APIAllocation, code string, joiner *relay.APIAllocation) {
	t.Helper()
	ctx := context.Background()
	host, err := a.api.Allocate(ctx, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	if code, err = a.api.JoinCode(ctx, host.AllocationID); err != nil {
		t.Fatal(err)
	}
	if joiner, err = b.api.Join(ctx, code); err != nil {
		t.Fatalf("join on node %s of a code made on node %s: %v", b.name, a.name, err)
	}
	return host, code, joiner
}

// An allocation and a join code made on node A join on node B; the
// joiner's allocation names A's relay, and the two clients talk through it.
func TestClusterJoinOnAnotherNode(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	a := startNode(t, "A", r.Addr, prefix)
	b := startNode(t, "B", r.Addr, prefix)
	hostAlloc, _, joinAlloc := allocateOnAJoinOnB(t, a, b)
	if got := fmt.Sprintf("%s:%d", joinAlloc.RelayServer.IPv4, joinAlloc.RelayServer.Port); got != a.relay {
		t.Fatalf("the joiner's relay: got %s, want the host's, node A's %s (node B's is %s)", got, a.relay, b.relay)
	}
	if !bytes.Equal(joinAlloc.HostConnectionData, hostAlloc.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connectionData")
	}

	host := dialClusterRelay(t, hostAlloc)
	hostID, _ := relay.ParseAllocationID(hostAlloc.AllocationID)
	hctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, hostDone := echoHost(hctx, t, host)
	joiner := dialClusterRelay(t, joinAlloc)
	if from, err := connectTo(t, joiner, joinAlloc.HostConnectionData); err != nil || from != hostID {
		t.Fatalf("CONNECT through node A's relay: got %x, %v", from, err)
	}
	if err := exchange(joiner, hostID, 1, 0, 50, 8); err != nil {
		t.Fatal(err)
	}
	cancel()
	host.Close()
	hostDone.Wait()
}

func dialClusterRelay(t *testing.T, a *relay.APIAllocation) *relay.Client {
	t.Helper()
	cfg, err := relay.ClientConfigFor(a)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Local, cfg.BindRetry, cfg.ConnectRetry = "127.0.0.1:0", 200*time.Millisecond, 200*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := relay.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Join guesses spread over three nodes meet one limit, the one a single
// node has: /v1/join's burst of 10 per client.
func TestClusterJoinGuessesShareOneLimit(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	nodes := []*node{startNode(t, "A", r.Addr, prefix), startNode(t, "B", r.Addr, prefix), startNode(t, "C", r.Addr, prefix)}
	const guesses = 30
	counts := map[int]int{}
	for i := range guesses {
		n := nodes[i%len(nodes)]
		status, h, _ := clusterRequest(t, "POST", n.http+"/relay/v1/join", fmt.Sprintf(`{"joinCode":"NOPE%02d"}`, i),
			"Authorization", "Bearer "+clusterToken)
		counts[status]++
		if status == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	// relay.DefaultJoinBurst guesses pass (one more if the 0.2/s rate
	// refilled one during the test), and the rest meet the limit: on one
	// node as on three.
	if passed := counts[http.StatusNotFound]; passed < relay.DefaultJoinBurst || passed > relay.DefaultJoinBurst+1 ||
		counts[http.StatusTooManyRequests] != guesses-passed {
		t.Fatalf("%d guesses over %d nodes: got %v, want %d (or %d) 404 and the rest 429", guesses, len(nodes), counts, relay.DefaultJoinBurst, relay.DefaultJoinBurst+1)
	}
}

// An admin change made on node A is served by node B, with the same ETag,
// so a client that moves between nodes still gets 304.
func TestClusterAdminChangeServedEverywhere(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	a := startNode(t, "A", r.Addr, prefix)
	b := startNode(t, "B", r.Addr, prefix)
	path := "/v1/fleets/" + clusterFleet + "/servers"
	_, ha, before := clusterRequest(t, "GET", a.http+path, "")
	_, hb, _ := clusterRequest(t, "GET", b.http+path, "")
	if ha.Get("ETag") == "" || ha.Get("ETag") != hb.Get("ETag") {
		t.Fatalf("before any change: ETags %q and %q, want one", ha.Get("ETag"), hb.Get("ETag"))
	}
	status, _, body := clusterRequest(t, "PUT", a.admin+"/qos-discovery/default/fleets/"+clusterFleet,
		`{"servers": [{"location_id": 7, "region_id": "admin-set", "ipv4": "198.51.100.7", "port": 9700}]}`)
	if status != http.StatusNoContent {
		t.Fatalf("PUT on node A: got %d %s", status, body)
	}
	var etag string
	testutil.WaitFor(t, "node B to serve node A's change", func() bool {
		_, h, body := clusterRequest(t, "GET", b.http+path, "")
		etag = h.Get("ETag")
		return strings.Contains(body, "198.51.100.7") && body != before
	})
	_, ha, bodyA := clusterRequest(t, "GET", a.http+path, "")
	if ha.Get("ETag") != etag || !strings.Contains(bodyA, "198.51.100.7") {
		t.Fatalf("ETags after the change: A %q, B %q; want the same", ha.Get("ETag"), etag)
	}
	if status, _, _ := clusterRequest(t, "GET", b.http+path, "", "If-None-Match", ha.Get("ETag")); status != http.StatusNotModified {
		t.Fatalf("node B asked with node A's ETag: got %d, want 304", status)
	}
	// A deletion on B reaches A.
	if status, _, body := clusterRequest(t, "DELETE", b.admin+"/qos-discovery/default/fleets/"+clusterFleet, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE on node B: got %d %s", status, body)
	}
	testutil.WaitFor(t, "node A to serve node B's deletion", func() bool {
		_, _, body := clusterRequest(t, "GET", a.http+path, "")
		return body == before
	})
}

// metricOf reads one series from a node's admin /metrics; 0 if absent.
func metricOf(t *testing.T, n *node, series string) float64 {
	t.Helper()
	_, _, body := clusterRequest(t, "GET", n.admin+"/metrics", "")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q", series, line)
			}
			return f
		}
	}
	return 0
}

// With Redis stopped, requests that need it answer 503 with Retry-After
// within the storage timeout (1s) and a margin, while QoS, the relay and
// discovery's cached answers keep working; limits fall back to local ones
// (counted); once Redis is back (with its append-only file, nothing is
// lost) everything works again, without a restart.
func TestClusterRedisOutage(t *testing.T) {
	r := testutil.StartRedis(t, testutil.RedisOptions{AppendOnly: true})
	prefix := testutil.RedisPrefix(t)
	a := startNode(t, "A", r.Addr, prefix)
	b := startNode(t, "B", r.Addr, prefix)
	ctx := context.Background()
	hostAlloc, code, joinAlloc := allocateOnAJoinOnB(t, a, b)
	host := dialClusterRelay(t, hostAlloc)
	hostID, _ := relay.ParseAllocationID(hostAlloc.AllocationID)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, hostDone := echoHost(hctx, t, host)
	defer func() { cancel(); host.Close(); hostDone.Wait() }()
	joiner := dialClusterRelay(t, joinAlloc)
	if _, err := connectTo(t, joiner, joinAlloc.HostConnectionData); err != nil {
		t.Fatal(err)
	}
	fleetPath := "/v1/fleets/" + clusterFleet + "/servers"
	_, h, fleetBody := clusterRequest(t, "GET", b.http+fleetPath, "")
	fleetETag := h.Get("ETag")
	fallbacksBefore := metricOf(t, a, `gamegate_relay_api_local_limit_decisions_total{limit="rate"}`)

	r.Stop(t)

	// The API: 503 with Retry-After, bounded by the timeout.
	for _, n := range []*node{a, b} {
		for _, req := range []struct{ path, body string }{
			{"/relay/v1/allocate", `{"maxConnections": 2}`},
			{"/relay/v1/joincode", `{"allocationId":"` + hostAlloc.AllocationID + `"}`},
			{"/relay/v1/join", `{"joinCode":"` + code + `"}`},
		} {
			start := time.Now()
			status, h, body := clusterRequest(t, "POST", n.http+req.path, req.body, "Authorization", "Bearer "+clusterToken)
			elapsed := time.Since(start)
			if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
				t.Fatalf("node %s %s with Redis stopped: got %d (Retry-After %q) %s, want 503 with Retry-After", n.name, req.path, status, h.Get("Retry-After"), body)
			}
			if strings.Contains(body, r.Addr) || strings.Contains(body, "refused") {
				t.Fatalf("the answer carries the store's address or error: %s", body)
			}
			// The storage timeout bounds a request however many
			// operations it makes: it fails at its first.
			if elapsed > outageBound {
				t.Fatalf("node %s %s took %v with Redis stopped, want at most %v", n.name, req.path, elapsed, outageBound)
			}
		}
	}
	// An admin change cannot be shared: 503, and nothing changes.
	if status, h, _ := clusterRequest(t, "PUT", a.admin+"/qos-discovery/default/fleets/"+clusterFleet, `{"servers": []}`); status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("admin PUT with Redis stopped: got %d, want 503 with Retry-After", status)
	}
	// Limits fell back to local ones, and said so.
	if n := metricOf(t, a, `gamegate_relay_api_local_limit_decisions_total{limit="rate"}`) - fallbacksBefore; n < 3 {
		t.Fatalf("local rate decisions on node A during the outage: got %v, want at least 3", n)
	}
	if !strings.Contains(a.out.String(), "enforces its limits alone") {
		t.Fatal("node A did not log that its limits fell back to local ones")
	}
	// UDP and cached answers keep working.
	qos := testutil.DialUDP(t, "127.0.0.1:0", a.qos)
	qos.Send(unityRequest(1, 7, 42))
	if _, ok := qos.Recv(replyTimeout); !ok {
		t.Fatal("no QoS answer with Redis stopped")
	}
	if err := exchange(joiner, hostID, 2, 0, 20, 4); err != nil {
		t.Fatalf("relay with Redis stopped: %v", err)
	}
	if status, h, body := clusterRequest(t, "GET", b.http+fleetPath, ""); status != http.StatusOK || body != fleetBody || h.Get("ETag") != fleetETag {
		t.Fatalf("discovery with Redis stopped: got %d %q", status, body)
	}

	r.Start(t)

	// Everything works again, without a restart, and the join code made
	// before the outage is still there (Redis's append-only file).
	// (A client that backs off as Retry-After says gets through once the
	// node's connection pool dials again, within a second or so.)
	for _, n := range []*node{a, b} {
		testutil.WaitFor(t, "node "+n.name+"'s API to answer again", func() bool {
			status, _, _ := clusterRequest(t, "POST", n.http+"/relay/v1/joincode", `{"allocationId":"`+hostAlloc.AllocationID+`"}`,
				"Authorization", "Bearer "+clusterToken)
			return status == http.StatusOK
		})
	}
	if _, err := b.api.Join(ctx, code); err != nil {
		t.Fatalf("join after Redis's restart: %v", err)
	}
	if _, err := a.api.Allocate(ctx, 1, ""); err != nil {
		t.Fatalf("allocate after Redis's restart: %v", err)
	}
	if status, _, body := clusterRequest(t, "PUT", a.admin+"/qos-discovery/default/fleets/"+clusterFleet,
		`{"servers": [{"region_id": "after", "ipv4": "198.51.100.9", "port": 9900}]}`); status != http.StatusNoContent {
		t.Fatalf("admin PUT after Redis's restart: got %d %s", status, body)
	}
	testutil.WaitFor(t, "node B to serve the change made after the restart", func() bool {
		_, _, body := clusterRequest(t, "GET", b.http+fleetPath, "")
		return strings.Contains(body, "198.51.100.9")
	})
	if !strings.Contains(a.out.String(), "limits are shared again") {
		t.Fatal("node A did not log that its limits are shared again")
	}
}
