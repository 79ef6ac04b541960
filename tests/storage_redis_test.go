package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// Join codes live in the configured storage: with storage redis, an
// allocation and its join code are records in Redis, and a join reads them
// back from there.
func TestRedisStorageHoldsJoinCodes(t *testing.T) {
	r := testutil.SharedRedis(t)
	prefix := testutil.RedisPrefix(t)
	addr := testutil.FreeTCPAddr(t)
	t.Setenv("GAMEGATE_TEST_REDIS_ADDRESS", r.Addr)
	testcaddy.Start(t, fmt.Sprintf(`{
	storage redis {
		address {env.GAMEGATE_TEST_REDIS_ADDRESS}
		key_prefix %s
	}
}
http://%s {
	relay_allocations {
		secrets %s
		insecure_no_auth
		public_address 203.0.113.8:7777
	}
}
`, prefix, addr, relayAPISecret))
	base := "http://" + addr
	host := allocateOK(t, base, "", `{"maxConnections": 2}`)
	code := joinCodeOK(t, base, "", host.AllocationID, http.StatusCreated)
	for _, key := range []string{"gamegate/relay/allocations/" + host.AllocationID, "gamegate/relay/joincodes/" + code} {
		if got := r.Do(t, "EXISTS", "{"+prefix+"}f:"+key); got != ":1" {
			t.Fatalf("EXISTS %s in Redis: got %s, want :1", key, got)
		}
	}
	if j := joinOK(t, base, "", code); !bytes.Equal(j.HostConnectionData, host.ConnectionData) {
		t.Fatal("hostConnectionData differs from the host's connectionData")
	}
}
