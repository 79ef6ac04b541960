package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis topologies as operators run them, on loopback, for tests of
// failovers: a master with a replica behind three Sentinels, and a
// cluster of three masters with a replica each. Their processes are the
// test's own and stop when it ends.

// RedisCLIPath is where Debian's redis-tools package installs redis-cli;
// scripts/peers installs it with the server.
const RedisCLIPath = "/usr/bin/redis-cli"

// RedisCLI runs redis-cli against addr with args and returns its output
// without the trailing newline.
func RedisCLI(t testing.TB, addr string, args ...string) string {
	t.Helper()
	out, err := redisCLI(addr, args...)
	if err != nil {
		t.Fatalf("redis-cli -h %s %s: %v: %s", addr, strings.Join(args, " "), err, out)
	}
	return out
}

// TryRedisCLI is RedisCLI returning its error rather than failing the
// test, for polls of servers that may be down.
func TryRedisCLI(addr string, args ...string) (string, error) { return redisCLI(addr, args...) }

func redisCLI(addr string, args ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, RedisCLIPath, append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimRight(string(out), "\n"), err
}

// RedisSentinel is a master, its replica and three Sentinels watching
// them (quorum 2, a master is down after 1 s without an answer).
type RedisSentinel struct {
	MasterName string
	Sentinels  []string // host:port of each Sentinel
	// Servers are the master at start and its replica.
	Servers []*Redis
}

// StartRedisSentinel starts a Sentinel set and returns once every
// Sentinel knows the replica and the other Sentinels, so that a failover
// can be agreed on.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	RequireDebianPeer(t, RedisServerPath, "redis-server")
	RequireDebianPeer(t, RedisCLIPath, "redis-tools")
	s := &RedisSentinel{MasterName: "gamegate"}
	master := StartRedis(t, RedisOptions{AppendOnly: true})
	_, mport, _ := strings.Cut(master.Addr, ":")
	replica := StartRedis(t, RedisOptions{AppendOnly: true, Args: []string{"--replicaof", "127.0.0.1", mport}})
	s.Servers = []*Redis{master, replica}
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 10000\n"+
		"sentinel parallel-syncs %[1]s 1\n", s.MasterName, mport)
	for range 3 {
		r, err := newRedis(os.TempDir(), RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.sentinel = filepath.Join(r.dir, "sentinel.conf")
		if err := os.WriteFile(r.sentinel, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			const nobody = 65534
			_ = os.Chown(r.sentinel, nobody, nobody)
		}
		r.startOwned(t)
		s.Sentinels = append(s.Sentinels, r.Addr)
	}
	WaitForWithin(t, 30*time.Second, "the Sentinels to know the replica and each other", func() bool {
		for _, a := range s.Sentinels {
			out, err := redisCLI(a, "INFO", "sentinel")
			if err != nil || !strings.Contains(out, "slaves=1,sentinels=3") {
				return false
			}
		}
		return true
	})
	return s
}

// MasterAddr is the master's address as the first Sentinel that answers
// names it.
func (s *RedisSentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	for _, a := range s.Sentinels {
		out, err := redisCLI(a, "SENTINEL", "get-master-addr-by-name", s.MasterName)
		if f := strings.Fields(out); err == nil && len(f) == 2 {
			return f[0] + ":" + f[1]
		}
	}
	t.Fatal("no Sentinel names a master")
	return ""
}

// Server returns the server at addr.
func (s *RedisSentinel) Server(t testing.TB, addr string) *Redis {
	t.Helper()
	return redisAt(t, s.Servers, addr)
}

// redisAt returns the server of servers at addr.
func redisAt(t testing.TB, servers []*Redis, addr string) *Redis {
	t.Helper()
	for _, r := range servers {
		if r.Addr == addr {
			return r
		}
	}
	t.Fatalf("no redis-server at %s", addr)
	return nil
}

// RedisCluster is a Redis Cluster of three masters with a replica each,
// with a node timeout of 1 s and cluster-require-full-coverage off (the
// slots of a lost master fail; the others keep serving).
type RedisCluster struct {
	Nodes []*Redis
}

// StartRedisCluster starts a cluster and returns once every node sees
// it whole and ok.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	RequireDebianPeer(t, RedisServerPath, "redis-server")
	RequireDebianPeer(t, RedisCLIPath, "redis-tools")
	c := &RedisCluster{}
	var addrs []string
	for range 6 {
		bus := FreeTCPAddr(t)
		_, busPort, _ := strings.Cut(bus, ":")
		r := StartRedis(t, RedisOptions{AppendOnly: true, Args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
			"--cluster-port", busPort,
		}})
		c.Nodes = append(c.Nodes, r)
		addrs = append(addrs, r.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := redisCLI(addrs[0], args...)
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK(t, c.Nodes...)
	return c
}

// Addrs are the nodes' addresses.
func (c *RedisCluster) Addrs() []string {
	var a []string
	for _, r := range c.Nodes {
		a = append(a, r.Addr)
	}
	return a
}

// WaitOK waits until each of nodes reports cluster_state:ok and agrees
// with the others on which master serves each of its slots.
func (c *RedisCluster) WaitOK(t testing.TB, nodes ...*Redis) {
	t.Helper()
	WaitForWithin(t, 30*time.Second, "the cluster to be ok", func() bool {
		var first string
		for i, r := range nodes {
			info, err := redisCLI(r.Addr, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			m := c.masters(r.Addr)
			if m == nil {
				return false
			}
			if s := fmt.Sprint(m); i == 0 {
				first = s
			} else if s != first {
				return false
			}
		}
		return true
	})
}

// ClusterShard is a master and its replicas as one node sees them.
type ClusterShard struct {
	Master   string
	Replicas []string
	Slots    [][2]int // ranges, inclusive
}

// Owns reports whether the shard serves slot.
func (s ClusterShard) Owns(slot int) bool {
	for _, r := range s.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// Shards returns the shards as the node at addr sees them: live masters
// with their slots, and their replicas.
func (c *RedisCluster) Shards(t testing.TB, addr string) []ClusterShard {
	t.Helper()
	m := c.masters(addr)
	if m == nil {
		t.Fatalf("CLUSTER NODES on %s failed", addr)
	}
	return m
}

// masters parses CLUSTER NODES: nil if the node does not answer.
func (c *RedisCluster) masters(addr string) []ClusterShard {
	out, err := redisCLI(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil
	}
	byID := map[string]*ClusterShard{}
	var ids []string
	type replica struct{ addr, of string }
	var replicas []replica
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		flags := f[2]
		if strings.Contains(flags, "fail") && !strings.Contains(flags, "pfail") {
			continue
		}
		switch {
		case strings.Contains(flags, "master") && len(f) > 8:
			s := &ClusterShard{Master: a}
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				if !ok {
					hi = lo
				}
				l, err1 := strconv.Atoi(lo)
				h, err2 := strconv.Atoi(hi)
				if err1 == nil && err2 == nil {
					s.Slots = append(s.Slots, [2]int{l, h})
				}
			}
			byID[f[0]] = s
			ids = append(ids, f[0])
		case strings.Contains(flags, "slave"):
			replicas = append(replicas, replica{a, f[3]})
		}
	}
	for _, r := range replicas {
		if s := byID[r.of]; s != nil {
			s.Replicas = append(s.Replicas, r.addr)
		}
	}
	var shards []ClusterShard
	for _, id := range ids {
		shards = append(shards, *byID[id])
	}
	// One order for every node: by first slot.
	for i := range shards {
		for j := i + 1; j < len(shards); j++ {
			if len(shards[j].Slots) > 0 && (len(shards[i].Slots) == 0 || shards[j].Slots[0][0] < shards[i].Slots[0][0]) {
				shards[i], shards[j] = shards[j], shards[i]
			}
		}
	}
	return shards
}

// Slot is the cluster slot of key.
func (c *RedisCluster) Slot(t testing.TB, key string) int {
	t.Helper()
	n, err := strconv.Atoi(RedisCLI(t, c.Nodes[0].Addr, "CLUSTER", "KEYSLOT", key))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Node returns the node at addr.
func (c *RedisCluster) Node(t testing.TB, addr string) *Redis {
	t.Helper()
	return redisAt(t, c.Nodes, addr)
}
