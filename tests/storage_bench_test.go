package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	"github.com/gamegate/gamegate/store/redisstore"
)

// BenchmarkRelayAPIStorage measures /v1/allocate and /v1/join through a
// real Caddy on file storage and on storage redis, in the same run, with
// the limits out of the way; on Redis it reports the round trips each
// request took (the Stores' own count) and the scripts it ran (the
// server's INFO commandstats):
//
//	go test -run '^$' -bench RelayAPIStorage -benchtime 2000x ./tests
func BenchmarkRelayAPIStorage(b *testing.B) {
	r := testutil.SharedRedis(b)
	for _, storage := range []string{"file", "redis"} {
		b.Run(storage, func(b *testing.B) {
			addr := testutil.FreeTCPAddr(b)
			global := "storage file_system " + b.TempDir()
			if storage == "redis" {
				global = fmt.Sprintf("storage redis {\n\t\taddress %s\n\t\tkey_prefix %s\n\t}", r.Addr, testutil.RedisPrefix(b))
			}
			testcaddy.Start(b, fmt.Sprintf(`{
	%s
}
http://%s {
	relay_allocations {
		secrets %s
		insecure_no_auth
		public_address 203.0.113.7:7777
		max_allocations 1000000
		max_allocations_per_client 1000000
		max_allocations_per_network 1000000
		allocate_rate 1000000
		allocate_burst 1000000
		join_rate 1000000
		join_burst 1000000
		join_network_rate 1000000
		join_network_burst 1000000
		join_code_rate 1000000
		join_code_burst 1000000
	}
}
`, global, addr, relayAPISecret))
			base := "http://" + addr
			api := &relay.APIClient{Base: base}
			host, err := api.Allocate(context.Background(), 100, "")
			if err != nil {
				b.Fatal(err)
			}
			code, err := api.JoinCode(context.Background(), host.AllocationID)
			if err != nil {
				b.Fatal(err)
			}
			for _, ep := range []struct{ name, path, body string }{
				{"allocate", "/v1/allocate", `{"maxConnections": 2}`},
				{"join", "/v1/join", `{"joinCode":"` + code + `"}`},
			} {
				b.Run(ep.name, func(b *testing.B) {
					trips, scripts := redisstore.RoundTrips(), 0
					if storage == "redis" {
						scripts = redisScripts(b, r)
					}
					start := time.Now()
					b.SetParallelism(4)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							resp, err := httpClient.Post(base+ep.path, "application/json", strings.NewReader(ep.body))
							if err != nil {
								b.Error(err)
								return
							}
							resp.Body.Close()
							if resp.StatusCode >= 300 {
								b.Errorf("%s: %d", ep.path, resp.StatusCode)
								return
							}
						}
					})
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
					if storage == "redis" {
						b.ReportMetric(float64(redisstore.RoundTrips()-trips)/float64(b.N), "round_trips/op")
						b.ReportMetric(float64(redisScripts(b, r)-scripts)/float64(b.N), "scripts/op")
					}
				})
			}
		})
	}
}

// redisScripts is the server's count of scripts run (EVALSHA and EVAL in
// INFO commandstats, which also counts the commands scripts call).
func redisScripts(b *testing.B, r *testutil.Redis) int {
	total := 0
	for _, line := range strings.Split(r.Do(b, "INFO", "commandstats"), "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		_, rest, _ := strings.Cut(line, "calls=")
		n, _, _ := strings.Cut(rest, ",")
		v, err := strconv.Atoi(n)
		if err != nil {
			b.Fatalf("INFO commandstats: %q", line)
		}
		total += v
	}
	return total
}
