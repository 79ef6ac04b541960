package tests

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
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
