package gqp

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// At the longest upstream_timeout Validate accepts, an answer's wait (an
// upstream request and a second) is positive; one past it is refused by
// name, before any wait could overflow to a negative duration.
func TestResponderWaitsAtTheBound(t *testing.T) {
	r, err := NewResponder(Config{UpstreamTimeout: duration.Duration(MaxUpstreamTimeout)})
	if err != nil {
		t.Fatalf("upstream_timeout %v: %v", MaxUpstreamTimeout, err)
	}
	defer r.Close()
	if got, want := r.answerBy, MaxUpstreamTimeout+time.Second; got != want {
		t.Errorf("answer wait: got %v, want %v", got, want)
	}
	for _, d := range []time.Duration{MaxUpstreamTimeout + 1, 1<<63 - 1, -1} {
		err := (&Config{UpstreamTimeout: duration.Duration(d)}).Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "upstream_timeout must be a duration in [") {
			t.Errorf("upstream_timeout %v: got %v, want an error naming upstream_timeout and its range", d, err)
		}
	}
}

// countedResponder returns a responder for cfg on a real socket on
// loopback, and the drops it counted by reason.
func countedResponder(t *testing.T, cfg Config) (r *Responder, addr string, drops *[NumDrops]atomic.Int64) {
	t.Helper()
	drops = new([NumDrops]atomic.Int64)
	cfg.Dropped = func(d Drop) { drops[d].Add(1) }
	r, err := NewResponder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	srv := &dgram.Server{Protocols: []dgram.Protocol{r}, Batch: 1}
	go srv.Serve(pc)
	t.Cleanup(func() {
		srv.Close()
		r.Close()
	})
	return r, pc.LocalAddr().String(), drops
}

// The responder drops, and counts by reason, what it will not wait for:
// queries past its bounded queue, queries needing an upstream from
// sources that have not validated, oversized datagrams; and Close drops
// every query still waiting for an upstream that never answers, without
// waiting for it.
func TestResponderDropsWithReasons(t *testing.T) {
	release := make(chan struct{})
	var requests atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	slow := &CommandConfig{URL: up.URL, UpstreamRate: 1000, UpstreamBurst: 1000}

	t.Run("queue_full and stopped", func(t *testing.T) {
		r, addr, drops := countedResponder(t, Config{UpstreamTimeout: duration.Duration(time.Minute), Commands: map[string]*CommandConfig{"slow": slow}})
		client := testutil.DialUDP(t, "127.0.0.1:0", addr)
		// Each query has its own argument, so each needs its own upstream
		// request: the free list holds ResponderQueue of them, the rest are
		// dropped.
		const sent = ResponderQueue + 36
		for i := range sent {
			client.Send(testutil.Encode(t, wiregqp.QueryOf("slow", fmt.Sprint(i))))
		}
		testutil.WaitFor(t, "every query to be queued or dropped", func() bool {
			return drops[DropQueueFull].Load() == sent-ResponderQueue
		})
		testutil.WaitFor(t, "the workers to wait for the upstream", func() bool { return requests.Load() >= ResponderWorkers })
		r.Close() // the upstream never answers: Close must not wait for it
		if got := drops[DropStopped].Load(); got != ResponderQueue {
			t.Errorf("stopped: got %d, want %d (every query running or queued)", got, ResponderQueue)
		}
		if got := drops[DropQueueFull].Load(); got != sent-ResponderQueue {
			t.Errorf("queue_full: got %d, want %d", got, sent-ResponderQueue)
		}
	})

	t.Run("unvalidated", func(t *testing.T) {
		_, addr, drops := countedResponder(t, Config{TrustedNetworks: []string{"none"}, Commands: map[string]*CommandConfig{"slow": slow}})
		testutil.DialUDP(t, "127.0.0.1:0", addr).Send(testutil.Encode(t, wiregqp.QueryOf("slow")))
		testutil.WaitFor(t, "the query to be dropped as unvalidated", func() bool { return drops[DropUnvalidated].Load() == 1 })
	})

	t.Run("too_large", func(t *testing.T) {
		r, _, drops := countedResponder(t, Config{})
		big := append(bytes.Repeat([]byte("a"), wiregqp.MaxQuery), wiregqp.EOT)
		if r.Match(big) {
			t.Fatal("a datagram longer than a query matched")
		}
		// A caddy-l4 route hands the association's datagrams over unpeeked.
		r.ServeDatagram(new(dgram.Writer), netip.MustParseAddrPort("127.0.0.1:9"), big)
		if got := drops[DropTooLarge].Load(); got != 1 {
			t.Fatalf("too_large: got %d, want 1", got)
		}
	})
}

func TestConfigTrustedNetworks(t *testing.T) {
	for _, tc := range []struct {
		networks []string
		want     []netip.Prefix
		err      string
	}{
		{nil, nil, ""},
		{[]string{"none"}, []netip.Prefix{}, ""},
		{[]string{"10.0.0.0/8", "::1"}, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}, ""},
		{[]string{"none", "10.0.0.0/8"}, nil, "trusted_networks: none must stand alone"},
		{[]string{"10.0.0.0/33"}, nil, `trusted_networks: "10.0.0.0/33" is not a CIDR or IP address`},
	} {
		cfg := Config{TrustedNetworks: tc.networks}
		got, err := cfg.trusted()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: got %v, want %q", tc.networks, err, tc.err)
			}
			if verr := cfg.Validate(); verr == nil || verr.Error() != tc.err {
				t.Errorf("%v: Validate: got %v, want %q", tc.networks, verr, tc.err)
			}
			continue
		}
		if err != nil || (got == nil) != (tc.want == nil) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: got %v (%v), want %v", tc.networks, got, err, tc.want)
		}
	}
}

// Each command's form is checked whichever way it was written: JSON can
// say what the Caddyfile cannot (a null command, a null record).
func TestConfigCommandsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmds map[string]*CommandConfig
		want string
	}{
		{"static", map[string]*CommandConfig{"motd": {Records: []Pair{{Name: "text", Value: "hi"}}}}, ""},
		{"null", map[string]*CommandConfig{"motd": nil}, `command "motd": give url or records`},
		{"empty", map[string]*CommandConfig{"motd": {}}, `command "motd": give url or records`},
		{"both", map[string]*CommandConfig{"motd": {URL: "http://127.0.0.1/", Records: []Pair{{Name: "a"}}}}, `command "motd": give url or records, not both`},
		{"built in", map[string]*CommandConfig{"echo": {Records: []Pair{{Name: "a"}}}}, "command echo is built in"},
		{"null record", map[string]*CommandConfig{"motd": {Records: []Pair{{Name: "text", Value: "hi"}, {}}}}, `command "motd": record 2 has no name`},
	} {
		cfg := Config{Commands: tc.cmds}
		err := cfg.Validate()
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: Validate: %v, want %q", tc.name, err, tc.want)
		}
	}
}
