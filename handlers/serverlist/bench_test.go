package serverlist

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
)

// benchList is a list of n registered servers, each with a status of two
// players and a few variables (as bench/run's server_list workload), all
// cached.
func benchList(b *testing.B, n int) *List {
	clock := testutil.NewClock(time.Unix(1e9, 0))
	reg := master.NewRegistry(clock.Now)
	m, err := master.New(master.Config{Registry: reg, Now: clock.Now, HeartbeatRate: 1e6, MaxServersPerAddress: n})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		register(b, m, fmt.Sprintf("127.0.0.1:%d", 1000+i), fmt.Sprintf(`\hostname\Server %d\mapname\q3dm%d\clients\2\sv_maxclients\16\gamename\Quake3Arena`, i, i%7))
	}
	if got, _ := reg.Len(); got != n {
		b.Fatalf("%d servers registered, want %d", got, n)
	}
	statuses, err := NewStatuses(func(_ context.Context, addr string) (*query.Status, error) {
		st := &query.Status{Name: "Server " + addr, Map: "q3dm17", NumPlayers: 2, MaxPlayers: 16, Protocol: "quake3", Version: "ioq3 1.36",
			Players: []query.Player{{Name: "Visor", Raw: map[string]any{"frags": 3, "ping": 40}}, {Name: "Sarge", Raw: map[string]any{"frags": 1, "ping": 60}}},
			Bots:    []query.Player{}, Raw: map[string]any{"g_gametype": "0", "sv_maxclients": "16", "mapname": "q3dm17", "gamename": "baseoa"}}
		st.SetAddress(addr, 0)
		return st, nil
	}, clock.Now)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(statuses.Close)
	l, err := New(Config{Registry: reg, Statuses: statuses, Now: clock.Now, TTL: duration.Duration(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if statuses.Len() == n && allQueried(l) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("statuses not queried")
		}
		l.Servers(netip.MustParseAddr("127.0.0.1"))
		time.Sleep(time.Millisecond)
	}
	return l
}

func allQueried(l *List) bool {
	for _, s := range l.Cached(netip.MustParseAddr("127.0.0.1")) {
		if s.json == nil {
			return false
		}
	}
	return true
}

// BenchmarkServeList compares an answer held (what ServeHTTP does) with
// one built per request (what it did before answers were held: the
// servers, the filter, the encoding and the ETag for every request), in
// one run.
func BenchmarkServeList(b *testing.B) {
	l := benchList(b, 50)
	client := netip.MustParseAddr("127.0.0.1")
	b.Run("held", func(b *testing.B) {
		b.ReportAllocs()
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "127.0.0.1:9"
		for b.Loop() {
			w := httptest.NewRecorder()
			if l.ServeHTTP(w, req) != 200 {
				b.Fatal(w.Code)
			}
			b.SetBytes(int64(w.Body.Len()))
		}
	})
	b.Run("built", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			servers := l.Servers(client)
			body, err := l.encode(Filter{Limit: DefaultLimit, Sort: "name"}.Apply(slices.Clone(servers)), servers)
			if err != nil {
				b.Fatal(err)
			}
			_ = cache.ETag(body, false)
			b.SetBytes(int64(len(body)))
		}
	})
}
