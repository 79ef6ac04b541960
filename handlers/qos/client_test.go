package qos

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// udpServer answers each datagram on a loopback socket with what reply
// returns for it, the n-th (from 0) since the server started.
func udpServer(t *testing.T, reply func(n int, req []byte) [][]byte) netip.AddrPort {
	t.Helper()
	n := -1
	return testutil.ServeUDP(t, func(_ netip.AddrPort, req []byte) [][]byte {
		n++
		return reply(n, req)
	})
}

// engineServer is a QoS echo server: the real engine on a real socket.
func engineServer(t *testing.T, cfg Config) netip.AddrPort {
	table := NewSourceTable(100, nil, 0)
	e, err := NewEngine(cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	return udpServer(t, func(_ int, req []byte) [][]byte {
		resp, _ := e.Handle(src("127.0.0.1:1"), req, nil)
		if resp == nil {
			return nil
		}
		return [][]byte{resp}
	})
}

func newChecker(t *testing.T, cfg CheckConfig) *Checker {
	t.Helper()
	if cfg.Wait == 0 {
		cfg.Wait = 2 * time.Second
	}
	c, err := NewChecker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckContactsEachServerOnce(t *testing.T) {
	addr := engineServer(t, Config{Rate: 1000, Burst: 1000, BanUnits: 1, BanDuration: duration.Duration(time.Minute)})
	targets := []Target{{Region: "eu-west", Addr: addr}, {Region: "eu-central", Addr: addr}}
	c := newChecker(t, CheckConfig{Requests: 15, PacketSize: 200})
	results, err := c.Check(context.Background(), targets)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("got %d server results, want 1 for one server serving two regions", len(results))
	}
	r := results[0]
	if r.Sent != 15 || r.Received != 15 || r.Loss() != 0 || r.Duplicates != 0 || r.Stale != 0 {
		t.Fatalf("got sent %d received %d loss %v dup %d stale %d, want 15/15/0/0/0", r.Sent, r.Received, r.Loss(), r.Duplicates, r.Stale)
	}
	if len(r.Latencies) != 15 || r.Percentile(50) <= 0 || r.Percentile(95) < r.Percentile(50) {
		t.Fatalf("latencies %v: want 15 positive, ordered", r.Latencies)
	}
	regions := ByRegion(targets, results)
	if len(regions) != 2 || regions[0].Region != "eu-west" || regions[1].Region != "eu-central" || regions[0].ServerResult != regions[1].ServerResult {
		t.Fatalf("by region: got %+v, want both regions sharing the one server's result", regions)
	}
}

func TestCheckCountsLossDuplicatesAndStale(t *testing.T) {
	var staleSent atomic.Bool
	addr := udpServer(t, func(n int, req []byte) [][]byte {
		var r wireqos.Request
		if r.Decode(req) != nil {
			return nil
		}
		resp := wireqos.AppendResponse(nil, wireqos.FlowNone, r.Custom)
		out := [][]byte{}
		if n%2 == 0 {
			out = append(out, resp, resp) // answered twice: one duplicate
		}
		if !staleSent.Swap(true) {
			stale := wireqos.AppendResponse(nil, wireqos.FlowNone, r.Custom)
			stale[3] ^= 0xFF // another check's identifier
			out = append(out, stale)
		}
		return out
	})
	c := newChecker(t, CheckConfig{Requests: 10, Wait: 300 * time.Millisecond})
	results, err := c.Check(context.Background(), []Target{{Region: "r", Addr: addr}})
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.Sent != 10 || r.Received != 5 || r.Loss() != 0.5 || r.Duplicates != 5 || r.Stale != 1 {
		t.Fatalf("got sent %d received %d loss %v dup %d stale %d, want 10/5/0.5/5/1", r.Sent, r.Received, r.Loss(), r.Duplicates, r.Stale)
	}
}

func TestCheckIgnoresUnknownSources(t *testing.T) {
	// The target hands each request to a second socket, which answers the
	// client correctly but from its own address: the client asked the
	// target, so those answers must not count.
	other, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var answered atomic.Int32
	relay, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := relay.ReadFrom(buf)
			if err != nil {
				return
			}
			var r wireqos.Request
			if r.Decode(buf[:n]) == nil {
				if _, err := other.WriteTo(wireqos.AppendResponse(nil, wireqos.FlowNone, r.Custom), from); err == nil {
					answered.Add(1)
				}
			}
		}
	}()
	c := newChecker(t, CheckConfig{Requests: 5, Wait: 300 * time.Millisecond})
	results, err := c.Check(context.Background(), []Target{{Region: "r", Addr: relay.LocalAddr().(*net.UDPAddr).AddrPort()}})
	if err != nil {
		t.Fatal(err)
	}
	if answered.Load() == 0 {
		t.Fatal("the other socket answered nothing: the test proves nothing")
	}
	if r := results[0]; r.Received != 0 || r.Loss() != 1 {
		t.Fatalf("got %d received (loss %v), want 0: every answer came from an address not asked", r.Received, r.Loss())
	}
}

func TestCheckHonoursFlowControl(t *testing.T) {
	// A server that bans after 3 requests.
	addr := engineServer(t, Config{Rate: 1, Burst: 3, BanUnits: 2, BanDuration: duration.Duration(time.Hour)})
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	c := newChecker(t, CheckConfig{Requests: 5, Wait: 300 * time.Millisecond, Now: clock.Now})
	results, err := c.Check(context.Background(), []Target{{Region: "r", Addr: addr}})
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if !r.Flow.IsBan() || r.Flow.Units() != 2 || r.Received != 4 {
		t.Fatalf("got flow %v and %d responses, want a 2-unit ban and 4 responses (3 in the burst, 1 announcing the ban)", r.Flow, r.Received)
	}
	wantUntil := clock.Now().Add(4*time.Minute + 30*time.Second)
	if !r.SkippedUntil.Equal(wantUntil) {
		t.Fatalf("skip until: got %v, want %v (ban + 30 s)", r.SkippedUntil, wantUntil)
	}
	clock.Advance(4*time.Minute + 29*time.Second)
	results, _ = c.Check(context.Background(), []Target{{Region: "r", Addr: addr}})
	if r := results[0]; !r.Skipped || r.Sent != 0 {
		t.Fatalf("during the ban: got skipped %v sent %d, want the server skipped", r.Skipped, r.Sent)
	}
	clock.Advance(2 * time.Second)
	results, _ = c.Check(context.Background(), []Target{{Region: "r", Addr: addr}})
	if r := results[0]; r.Skipped || r.Sent != 5 {
		t.Fatalf("after the ban and margin: got skipped %v sent %d, want 5 requests sent", r.Skipped, r.Sent)
	}
}

func TestNewCheckerRefuses(t *testing.T) {
	for _, cfg := range []CheckConfig{{Requests: 257}, {PacketSize: 1501}, {Title: string(make([]byte, 255))}} {
		if _, err := NewChecker(cfg); err == nil {
			t.Fatalf("NewChecker(%+v): got nil error, want one", cfg)
		}
	}
}
