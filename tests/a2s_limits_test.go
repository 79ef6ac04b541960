package tests

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// manyRules is an A2S_RULES answer of n rules, about 110 bytes each.
func manyRules(n int) wirea2s.Rules {
	var m wirea2s.Rules
	for i := range n {
		m.Rules = append(m.Rules, wirea2s.Rule{Name: []byte(fmt.Sprintf("sv_rule_%03d", i)),
			Value: bytes.Repeat([]byte{'a' + byte(i%26)}, 96)})
	}
	return m
}

// a2sAsk sends a request of type typ on conn, follows the challenge, and
// returns the whole answer, reassembled.
func a2sAsk(conn *net.UDPConn, typ wirea2s.Type) ([]byte, error) {
	req := wirea2s.Request{Type: typ, Challenge: wirea2s.NoChallenge, HasChallenge: typ != wirea2s.TypeInfoRequest}
	buf := make([]byte, 65536)
	r := wirea2s.Reassembler{}
	deadline := time.Now().Add(5 * time.Second)
	for round := 0; round < 3; round++ {
		out, _ := req.AppendTo(nil)
		if _, err := conn.Write(out); err != nil {
			return nil, err
		}
		for {
			_ = conn.SetReadDeadline(deadline)
			n, err := conn.Read(buf)
			if err != nil {
				return nil, err
			}
			d := buf[:n]
			if c, err := wirea2s.DecodeChallenge(d); err == nil {
				req.Challenge, req.HasChallenge = c, true
				break
			}
			if n >= 4 && d[0] == 0xFE {
				complete, err := r.Add(d)
				if err != nil {
					return nil, err
				}
				if complete {
					return bytes.Clone(r.Message()), nil
				}
				continue
			}
			return bytes.Clone(d), nil
		}
	}
	return nil, errors.New("challenged every time")
}

// A source that passed its challenge floods A2S_RULES requests (9 bytes
// each) at a shield whose game server has 500 rules (an answer of about
// 57 KB, 46 datagrams): the shield sends it at most its byte burst plus
// its byte rate for the time the flood took (the default limits), a small
// multiple of what it sent, where it used to answer every request
// (×6,000); meanwhile a client at another address is answered in full.
func TestA2SShieldValidatedFlood(t *testing.T) {
	for _, h := range a2sHosts {
		t.Run(h.name, func(t *testing.T) { testA2SShieldValidatedFlood(t, h.inApp) })
	}
}

func testA2SShieldValidatedFlood(t *testing.T, inApp bool) {
	rules := manyRules(500)
	game := a2sserver.Start(t, a2sserver.Config{Info: a2sInfo("Busy Server"), Players: a2sPlayers, Rules: rules})
	addr := testutil.FreeUDPAddr(t)
	shield := fmt.Sprintf(`layer4 {
		udp/%s {
			route {
				a2s_shield %s {
					ttl 1h
				}
			}
		}
	}`, addr, game.Addr)
	if inApp {
		shield = fmt.Sprintf(`gamegate {
		udp %s {
			a2s_shield %s {
				ttl 1h
			}
		}
	}`, addr, game.Addr)
	}
	c := testcaddy.Start(t, fmt.Sprintf("{\n\tadmin off\n\t%s\n}\n", shield))
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}

	// A client at another address fills the shield's cache.
	first, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	msg, err := a2sAsk(first, wirea2s.TypeRulesRequest)
	if err != nil {
		t.Fatal(err)
	}
	var decoded wirea2s.Rules
	if err := decoded.Decode(msg); err != nil || len(decoded.Rules) != 500 {
		t.Fatalf("rules answer: %d rules, %v", len(decoded.Rules), err)
	}

	// The attacker takes its challenge: the only exchange before the flood.
	attacker, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	_ = attacker.SetReadBuffer(8 << 20)
	challenge, err := challengeOf(attacker)
	if err != nil {
		t.Fatal(err)
	}

	const (
		limited   = `gamegate_a2s_shield_requests_total{outcome="dropped_source_limit"}`
		sentBytes = `gamegate_a2s_shield_answer_bytes_total`
	)
	limitedBefore, bytesBefore := c.MustMetric(t, limited), c.MustMetric(t, sentBytes)
	const requests = 2000
	req, _ := (&wirea2s.Request{Type: wirea2s.TypeRulesRequest, Challenge: challenge, HasChallenge: true}).AppendTo(nil)
	received := make(chan [2]int64)
	start := time.Now()
	go func() {
		// Read until 2 s pass without a datagram (at most 30 s).
		buf := make([]byte, 65536)
		var bytes, datagrams int64
		end := time.Now().Add(30 * time.Second)
		for time.Now().Before(end) {
			_ = attacker.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := attacker.Read(buf)
			if err != nil {
				break
			}
			bytes += int64(n)
			datagrams++
		}
		received <- [2]int64{bytes, datagrams}
	}()
	for i := range requests {
		if _, err := attacker.Write(req); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // let the shield's socket buffer drain, so the requests are read
		}
	}
	sentFor := time.Since(start)

	// A client at a third address asks everything while the flood's
	// answers go out, and is answered in full.
	honest, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 3)}, raddr)
	if err != nil {
		t.Fatal(err)
	}
	defer honest.Close()
	for _, typ := range []wirea2s.Type{wirea2s.TypeInfoRequest, wirea2s.TypePlayerRequest, wirea2s.TypeRulesRequest} {
		got, err := a2sAsk(honest, typ)
		if err != nil {
			t.Fatalf("honest client, request %#x: %v", byte(typ), err)
		}
		if typ == wirea2s.TypeRulesRequest && !bytes.Equal(got, msg) {
			t.Fatalf("honest client: a rules answer of %d bytes, want %d", len(got), len(msg))
		}
	}

	r := <-received
	elapsed := time.Since(start)
	sent := int64(requests * len(req))
	answered, datagrams := r[0], r[1]
	// The bound: the byte burst (or one answer larger than it), and the
	// byte rate for as long as the flood and its answers took.
	bound := int64(max(a2s.DefaultByteBurst, len(msg)+64*12)) + int64(a2s.DefaultByteRate*elapsed.Seconds()) + 1
	t.Logf("%d requests (%d bytes, sent in %v) from one validated source drew %d datagrams, %d bytes (×%.1f) in %v; bound %d bytes; honest client answered in full",
		requests, sent, sentFor.Round(time.Millisecond), datagrams, answered, float64(answered)/float64(sent), elapsed.Round(time.Millisecond), bound)
	if answered > bound {
		t.Fatalf("answered %d bytes (×%.1f of the %d sent), want at most %d", answered, float64(answered)/float64(sent), sent, bound)
	}
	// The refusals and the bytes sent are counted.
	if n := c.MustMetric(t, limited) - limitedBefore; n < 1 {
		t.Fatalf("%s grew by %v, want refusals counted", limited, n)
	}
	if n := c.MustMetric(t, sentBytes) - bytesBefore; n < float64(answered) {
		t.Fatalf("%s grew by %v, want at least the %d bytes the flood drew", sentBytes, n, answered)
	}
}

// challengeOf asks the shield for conn's challenge.
func challengeOf(conn *net.UDPConn) (int32, error) {
	out, _ := (&wirea2s.Request{Type: wirea2s.TypePlayerRequest, Challenge: wirea2s.NoChallenge, HasChallenge: true}).AppendTo(nil)
	if _, err := conn.Write(out); err != nil {
		return 0, err
	}
	buf := make([]byte, 65536)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return 0, err
		}
		if c, err := wirea2s.DecodeChallenge(buf[:n]); err == nil {
			return c, nil
		}
	}
}
