package relay

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// fromHeader makes the X-Test-IP header the client address, for tests of
// many clients.
func fromHeader(cfg *APIConfig) {
	cfg.ClientIP = func(r *http.Request) netip.Addr {
		a, _ := netip.ParseAddr(r.Header.Get("X-Test-IP"))
		return a
	}
}

// One holder of an IPv6 /54 (1,024 /64s, each a client) takes allocations
// within every per-client limit: its /48 holds at most the per-network
// quota, and the rest of the pool is left to others.
func TestAPIPoolOneIPv6Slash54(t *testing.T) {
	r := newAPIRig(t, func(cfg *APIConfig) {
		fromHeader(cfg)
		cfg.MaxAllocationsPerClient = 0  // the default, 100
		cfg.MaxAllocationsPerNetwork = 0 // the default, 500
	})
	granted := 0
	for i := range 1024 {
		from := fmt.Sprintf("2001:db8:77:%x::1", 0x2c00+i) // 2001:db8:77:2c00::/54
		for range 10 {
			switch w := r.do("POST", "/v1/allocate", `{"maxConnections": 1}`, "X-Test-IP", from); w.Code {
			case http.StatusCreated:
				granted++
			case http.StatusTooManyRequests:
				if e := decodeAPIError(t, w); !strings.Contains(e.Detail, "network") || w.Header().Get("Retry-After") == "" {
					t.Fatalf("refusal: got %s, want the network's limit named, with Retry-After", w.Body)
				}
			default:
				t.Fatalf("allocation from %s: got %d %s", from, w.Code, w.Body)
			}
		}
	}
	if granted != DefaultMaxAllocationsPerNetwork {
		t.Fatalf("10,240 requests from 1,024 /64s of one /54: %d allocations granted, want the network's %d", granted, DefaultMaxAllocationsPerNetwork)
	}
	if w := r.do("POST", "/v1/allocate", `{"maxConnections": 1}`, "X-Test-IP", "2001:db8:78::1"); w.Code != http.StatusCreated {
		t.Fatalf("a client of another /48: got %d %s, want 201", w.Code, w.Body)
	}
}

// Requests without a valid token are limited per network: past the burst,
// the network gets 429 with Retry-After, with a valid token too (else the
// status would tell the right token from the wrong ones), and other
// networks are not held back.
func TestAPIAuthFailuresPerNetwork(t *testing.T) {
	r := newAPIRig(t, fromHeader)
	unauthorized, limited := 0, 0
	for i := range 200 {
		from := fmt.Sprintf("198.51.100.%d", i%250+1)
		w := r.do("GET", "/v1/regions", "", "Authorization", fmt.Sprintf("Bearer wrong-%d", i), "X-Test-IP", from)
		switch w.Code {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			limited++
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		default:
			t.Fatalf("wrong token %d: got %d %s", i, w.Code, w.Body)
		}
	}
	if unauthorized != DefaultAuthFailureBurst || limited != 200-DefaultAuthFailureBurst {
		t.Fatalf("200 wrong tokens from one /24: %d answered 401, %d 429; want %d and %d", unauthorized, limited, DefaultAuthFailureBurst, 200-DefaultAuthFailureBurst)
	}
	if w := r.do("GET", "/v1/regions", "", "X-Test-IP", "198.51.100.77"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("the right token from the limited network: got %d, want 429", w.Code)
	}
	if w := r.do("GET", "/v1/regions", "", "X-Test-IP", "198.51.101.1"); w.Code != http.StatusOK {
		t.Fatalf("the right token from another network: got %d %s, want 200", w.Code, w.Body)
	}
	// The rate earns the network another attempt.
	r.clock.Advance(time.Duration(float64(time.Second) / DefaultAuthFailureRate))
	if w := r.do("GET", "/v1/regions", "", "X-Test-IP", "198.51.100.77"); w.Code != http.StatusOK {
		t.Fatalf("the right token from the network after the wait: got %d %s, want 200", w.Code, w.Body)
	}
}
