package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
)

// relayAPITokenLong is a token long enough for any listener.
const relayAPITokenLong = "token-of-at-least-sixteen-bytes"

// startRelayAPIDefaults runs an allocations API with every limit at its
// default, behind no proxy: each client is the source address of its
// connection.
func startRelayAPIDefaults(t *testing.T) string {
	t.Helper()
	addr := testutil.FreeTCPAddr(t)
	t.Setenv("GAMEGATE_TEST_RELAY_API_SECRET", relayAPISecret)
	testcaddy.Start(t, fmt.Sprintf(`{
	storage file_system %s
}
http://%s {
	relay_allocations {
		secrets {env.GAMEGATE_TEST_RELAY_API_SECRET}
		tokens %s
		public_address 203.0.113.50:7777
	}
}
`, t.TempDir(), addr, relayAPITokenLong))
	return "http://" + addr
}

// clientFrom returns an HTTP client whose connections leave from ip, a
// loopback address (any 127/8 address is this machine's).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1},
	}
}

// postFrom sends a POST with token from c and returns the status and the
// Retry-After header.
func postFrom(t *testing.T, c *http.Client, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// attack runs each of clients' requests (its index and client) on a few
// workers, each client's in turn.
func attack(clients []string, each func(i int, c *http.Client)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(clients) {
					return
				}
				c := clientFrom(clients[i])
				each(i, c)
				c.CloseIdleConnections()
			}
		})
	}
	wg.Wait()
}

// addressesIn returns n loopback addresses spread over the /24s
// 127.<b>.<first>.0 onward, perNet in each.
func addressesIn(b, first, n, perNet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.%d.%d.%d", b, first+i/perNet, i%perNet+1)
	}
	return out
}

// 1,000 addresses in four /24s, each within its own burst of 10
// allocations, once took the whole pool (10,000) in seconds. Now each /24
// holds at most max_allocations_per_network (500), so the pool keeps most
// of its allocations for honest clients, who still get theirs.
func TestRelayAPIPoolManyAddressesFewNetworks(t *testing.T) {
	base := startRelayAPIDefaults(t)
	attackers := addressesIn(77, 0, 1000, 250)
	var granted, refused, other atomic.Int64
	attack(attackers, func(_ int, c *http.Client) {
		for range relay.DefaultAllocateBurst {
			switch status, retry := postFrom(t, c, base+"/v1/allocate", relayAPITokenLong, `{"maxConnections": 1}`); {
			case status == http.StatusCreated:
				granted.Add(1)
			case status == http.StatusTooManyRequests && retry != "":
				refused.Add(1)
			default:
				other.Add(1)
			}
		}
	})
	pool := relay.DefaultMaxAllocations
	left := pool - int(granted.Load())
	t.Logf("%d addresses in 4 /24s sent %d allocation requests: %d granted, %d refused (429), %d other; %d of %d allocations left (%.0f%%)",
		len(attackers), len(attackers)*relay.DefaultAllocateBurst, granted.Load(), refused.Load(), other.Load(), left, pool, 100*float64(left)/float64(pool))
	if max := 4 * relay.DefaultMaxAllocationsPerNetwork; int(granted.Load()) > max || other.Load() > 0 {
		t.Fatalf("the attack took %d allocations (%d answers neither 201 nor 429), want at most %d (four networks' quota): %d of %d left for honest clients",
			granted.Load(), other.Load(), max, left, pool)
	}
	for i := range 10 {
		c := clientFrom(fmt.Sprintf("127.78.%d.1", i))
		if status, _ := postFrom(t, c, base+"/v1/allocate", relayAPITokenLong, `{"maxConnections": 1}`); status != http.StatusCreated {
			t.Fatalf("honest client %d after the attack: got %d, want 201", i, status)
		}
	}
}

// 500 addresses in two /24s, each guessing join codes within its own burst
// (10, and one more per 5 s), once made 5,500 guesses in seconds; each
// /24's guesses together now stop at join_network_burst and the network's
// rate.
func TestRelayAPIJoinGuessingManyAddresses(t *testing.T) {
	base := startRelayAPIDefaults(t)
	guessers := addressesIn(79, 0, 500, 250)
	var looked, refused, other atomic.Int64
	start := time.Now()
	attack(guessers, func(i int, c *http.Client) {
		for g := range relay.DefaultJoinBurst + 1 {
			code := strings.Map(func(r rune) rune { return rune(relay.JoinCodeAlphabet[int(r-'0')]) }, fmt.Sprintf("%06d", i*11+g))
			switch status, _ := postFrom(t, c, base+"/v1/join", relayAPITokenLong, `{"joinCode":"`+code+`"}`); status {
			case http.StatusNotFound:
				looked.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				other.Add(1)
			}
		}
	})
	elapsed := time.Since(start)
	// Each network's burst, and what its rate earned while the guesses
	// were sent.
	bound := 2 * (relay.DefaultJoinNetworkBurst + int(elapsed.Seconds()*relay.DefaultJoinNetworkRate) + 1)
	t.Logf("%d addresses in 2 /24s sent %d join guesses in %v: %d looked up, %d refused (429), %d other; bound %d",
		len(guessers), len(guessers)*(relay.DefaultJoinBurst+1), elapsed.Round(time.Millisecond), looked.Load(), refused.Load(), other.Load(), bound)
	if int(looked.Load()) > bound || other.Load() > 0 {
		t.Fatalf("%d guesses looked up (%d answers neither 404 nor 429), want at most %d", looked.Load(), other.Load(), bound)
	}
	c := clientFrom("127.80.0.1")
	if status, _ := postFrom(t, c, base+"/v1/join", relayAPITokenLong, `{"joinCode":"BBBBBB"}`); status != http.StatusNotFound {
		t.Fatalf("a client of another network: got %d, want 404", status)
	}
}

// Wrong tokens from one address: past auth_failure_burst the network gets
// 429 with Retry-After, the right token included; another network still
// gets in.
func TestRelayAPIWrongTokensLimited(t *testing.T) {
	base := startRelayAPIDefaults(t)
	c := clientFrom("127.81.0.1")
	const tries = 500
	unauthorized, limited := 0, 0
	start := time.Now()
	for i := range tries {
		status, retry := postFrom(t, c, base+"/v1/allocate", "wrong-token-"+strconv.Itoa(i), `{"maxConnections": 1}`)
		switch {
		case status == http.StatusUnauthorized:
			unauthorized++
		case status == http.StatusTooManyRequests && retry != "":
			limited++
		default:
			t.Fatalf("wrong token %d: got %d (Retry-After %q)", i, status, retry)
		}
	}
	bound := relay.DefaultAuthFailureBurst + int(time.Since(start).Seconds()*relay.DefaultAuthFailureRate) + 1
	t.Logf("%d wrong tokens from one address: %d answered 401, %d 429; bound %d", tries, unauthorized, limited, bound)
	if unauthorized > bound {
		t.Fatalf("%d wrong tokens checked, want at most %d", unauthorized, bound)
	}
	if status, _ := postFrom(t, clientFrom("127.81.0.2"), base+"/v1/allocate", relayAPITokenLong, `{"maxConnections": 1}`); status != http.StatusTooManyRequests {
		t.Fatalf("the right token from the same /24: got %d, want 429", status)
	}
	if status, _ := postFrom(t, clientFrom("127.82.0.1"), base+"/v1/allocate", relayAPITokenLong, `{"maxConnections": 1}`); status != http.StatusCreated {
		t.Fatalf("the right token from another /24: got %d, want 201", status)
	}
}
