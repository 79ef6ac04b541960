package tests

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// Ten addresses of one network, each sending ad-hoc queries to targets that
// never answer (a new question each time, so nothing is cached or shared),
// used to hold every ad-hoc slot for the query timeout, and honest ad-hoc
// requests to a real answering server failed with 503. Slots are now taken
// only around upstream work and bounded per client network: the honest
// client's requests succeed, those needing a query and those answered from
// the cache alike.
func TestGameQueryAdHocSlotsSurviveSilentTargets(t *testing.T) {
	real := startCountingGQP(t, engineAnswer(t))
	var silent []string
	for range 8 {
		silent = append(silent, startCountingGQP(t, func([]byte) [][]byte { return nil }).addr)
	}
	env := startGameQuery(t, "", "ad_hoc gqp {\n\t\t\t\ttimeout 2s\n\t\t\t\tretries -1\n\t\t\t}\n\t\t\tallow_targets 127.0.0.0/8")

	const attackers, perAttacker = 10, 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var attacks, attacksRefused atomic.Int64
	for a := range attackers {
		c := clientFrom("127.0.0." + strconv.Itoa(10+a))
		for g := range perAttacker {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					url := fmt.Sprintf("%s/query/%s/echo?arg=%d-%d-%d", env.base, silent[(a+g+i)%len(silent)], a, g, i)
					resp, err := c.Get(url)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					attacks.Add(1)
					if resp.StatusCode == 429 {
						// Refused by its own limit: try again shortly.
						attacksRefused.Add(1)
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
					}
				}
			}()
		}
	}
	defer func() { close(stop); wg.Wait() }()
	// Let the attack fill what it can.
	testutil.WaitFor(t, "the attack under way", func() bool { return attacks.Load() >= attackers })

	honest := clientFrom("127.1.0.1")
	const asks = 16
	ok := 0
	var failures []string
	for i := range asks {
		// Every other request a new question (a query upstream), the
		// others the cached status.
		url := env.base + "/query/" + real.addr
		if i%2 == 0 {
			url += "/echo?arg=honest-" + strconv.Itoa(i)
		}
		resp, err := honest.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			ok++
		} else {
			failures = append(failures, fmt.Sprintf("%d %s", resp.StatusCode, body))
		}
		time.Sleep(500 * time.Millisecond) // the honest client's own pace: 2 per second, its ad_hoc_rate
	}
	t.Logf("honest ad-hoc requests: %d of %d succeeded while %d attacker requests (%d refused 429) held slots on silent targets",
		ok, asks, attacks.Load(), attacksRefused.Load())
	if frac := float64(ok) / asks; frac < 0.9 {
		t.Fatalf("honest ad-hoc requests: %d of %d (%.0f%%) succeeded under the attack, want at least 90%%; failures: %v",
			ok, asks, 100*frac, failures)
	}
}

// startBigStatusQuery starts a game_query whose server "big" (through a
// GQP responder and its JSON upstream) has a status of about 40 KB, the
// kind of answer a full server with long player names gives.
func startBigStatusQuery(t *testing.T) string {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var players []string
		for i := range 250 {
			players = append(players, fmt.Sprintf(`{"name": "player-%03d-%s", "score": %d}`, i, strings.Repeat("x", 60), i))
		}
		fmt.Fprintf(w, `{"hostname": "Big Arena", "map": "dm-deck16", "numplayers": 250, "maxplayers": 250, "players": [%s]}`,
			strings.Join(players, ","))
	}))
	t.Cleanup(upstream.Close)
	gqpAddr := testutil.FreeUDPAddr(t)
	httpAddr := testutil.FreeTCPAddr(t)
	testcaddy.Start(t, fmt.Sprintf(`{
	layer4 {
		udp/%s {
			@gqp gqp
			route @gqp {
				gqp {
					identify big 1 1
					command status {
						url %s/status
						ttl 1h
					}
				}
			}
		}
	}
}
http://%s {
	handle_path /query/* {
		game_query {
			server big %s gqp {
				status_command status
			}
			ttl status 1h
		}
	}
}
`, gqpAddr, upstream.URL, httpAddr, gqpAddr))
	return "http://" + httpAddr
}

// An 837-byte batch naming one server 100 times was answered with that
// server's cached status 100 times, built whole in memory (×7,834 the
// request's bytes; 20 clients took hundreds of MB). A batch now answers
// each distinct question once and streams it from the cached bytes: the
// answer is one status long, and the heap stays flat with 20 clients
// sending such batches at once.
func TestGameQueryBatchRepeatsAreAnsweredOnce(t *testing.T) {
	base := startBigStatusQuery(t)
	single := request(t, "GET", base+"/query/big")
	if single.status != 200 || len(single.body) < 20000 {
		t.Fatalf("the big status: got %d with %d bytes, want 200 with a large status: %s", single.status, len(single.body), single.body)
	}
	batch := `{"servers": [` + strings.Repeat(`"big",`, 99) + `"big"], "commands": ["status"]}`
	answerBytes := func(c *http.Client) (int, int64) {
		resp, err := c.Post(base+"/query/", "application/json", strings.NewReader(batch))
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, n
	}
	status, n := answerBytes(httpClient)
	t.Logf("a %d-byte batch of 100 repeats: %d answer bytes (×%.0f the request; one status is %d bytes)",
		len(batch), n, float64(n)/float64(len(batch)), len(single.body))
	if status != 200 || n > int64(len(single.body))+512 {
		t.Errorf("a batch of 100 repeats: got %d with %d bytes, want 200 with at most one status (%d bytes) and its frame",
			status, n, len(single.body))
	}

	// 20 clients, each from its own network, each sending 5 such batches
	// (within its batch burst) at the same time: the heap's peak growth.
	const clients, batchesEach = 20, 5
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var answered, bytesOut atomic.Int64
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := clientFrom(fmt.Sprintf("127.%d.0.1", 10+c))
			for range batchesEach {
				if status, n := answerBytes(hc); status == 200 {
					answered.Add(1)
					bytesOut.Add(n)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	growth := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("%d clients × %d batches: %d answered, %d answer bytes in all; heap peak %d MB above the %d MB before",
		clients, batchesEach, answered.Load(), bytesOut.Load(), growth>>20, before.HeapAlloc>>20)
	if answered.Load() != clients*batchesEach {
		t.Fatalf("%d of %d batches answered 200, want all (each client within its burst)", answered.Load(), clients*batchesEach)
	}
	const bound = 32 << 20
	if growth > bound {
		t.Fatalf("%d clients sending batches of repeats grew the heap by %d MB, want at most %d MB", clients, growth>>20, bound>>20)
	}
}
