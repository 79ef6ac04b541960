// Package a2sload measures cached A2S_INFO answers per second through
// gamegate's A2S shield, on the gamegate app and on a caddy-l4 route, in
// front of a real A2S game server (internal/testutil/a2sserver), against a
// bare Go echo loop and the C server echoing (package cserver), measured
// in the same rounds.
//
// The clients query as real ones do: an A2S_INFO request without a
// challenge, the shield's S2C_CHALLENGE, the request again with it, the
// answer: two round trips per answer. Against the echo loop the same client
// sends the same datagrams, and the echo of each plays the answer's part, so
// a query is two round trips there too. The C server echoes too, rather
// than answering A2S_INFO with a fixed reply: a baseline must not answer
// an unproven source with more bytes than it sent, and an echo is the
// floor of any answer from a cache (one datagram in, one out, no state).
// Every client socket keeps a window of queries in flight. The answers come
// from the shield's cache: the game server is asked once per ttl.
package a2sload

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/bench/internal/benchutil"
	"github.com/gamegate/gamegate/bench/internal/cserver"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// Config is one run's load and rounds.
type Config struct {
	Clients  int // client sockets per target
	Inflight int // queries in flight per client socket
	// CServer is the C server's program (package cserver), measured
	// echoing with one thread per CPU; empty: left out.
	CServer string
	benchutil.Schedule
}

type target struct {
	name, label, addr string
	rates             []float64
	lost              int
}

// Run starts the game server, the echo loop and the shields in this
// process, measures them and stops them.
func Run(cfg Config) (*benchutil.Workload, error) {
	game, err := a2sserver.Listen(a2sserver.Config{InfoChallenge: true, Info: wirea2s.Info{
		Protocol: 17, Name: []byte("gamegate bench"), Map: []byte("de_dust2"), Folder: []byte("csgo"),
		Game: []byte("Counter-Strike 2"), AppID: 730, Players: 12, MaxPlayers: 24, ServerType: 'd',
		Environment: 'l', VAC: 1, Version: []byte("1.40.1.2"), EDF: wirea2s.EDFPort, Port: 27015,
	}})
	if err != nil {
		return nil, err
	}
	defer game.Close()
	bare, err := benchutil.ListenEcho()
	if err != nil {
		return nil, err
	}
	defer bare.Close()
	var app, l4 string
	// No limit of the shield's should bind: every client is on 127.0.0.1,
	// one source.
	const limits = `ttl 1h
				rate 1000000000
				burst 1000000000
				byte_rate 1073741824
				byte_burst 1073741824
				total_byte_rate 1073741824
				total_byte_burst 1073741824`
	if err := benchutil.StartCaddyOnFreePorts(func() string {
		app, l4 = benchutil.FreeAddr("udp"), benchutil.FreeAddr("udp")
		return fmt.Sprintf(`{
	layer4 {
		udp/%[2]s {
			route {
				a2s_shield %[3]s {
				%[4]s
				}
			}
		}
	}
	gamegate {
		udp %[1]s {
			a2s_shield %[3]s {
				%[4]s
			}
		}
	}
}
`, app, l4, game.Addr, limits)
	}); err != nil {
		return nil, err
	}
	defer caddy.Stop() //nolint:errcheck

	targets := []*target{
		{name: "bare", label: "bare Go echo loop", addr: bare.LocalAddr().String()},
		{name: "gg-a2s", label: "gamegate app `a2s_shield`, default readers", addr: app},
		{name: "l4-a2s", label: "layer4 `a2s_shield` route", addr: l4},
	}
	if cfg.CServer != "" {
		c, err := cserver.Start(cfg.CServer, cserver.Echo, runtime.NumCPU())
		if err != nil {
			return nil, err
		}
		defer c.Close()
		targets = append(targets, &target{name: "c", label: fmt.Sprintf("C server echoing (recvmmsg/sendmmsg), %d threads", runtime.NumCPU()), addr: c.Addr})
	}
	loads, err := benchutil.Measure(cfg.Schedule, targets, func(t *target) string { return t.name },
		func(_ int, t *target) error {
			_, _, err := runLoad(t.addr, cfg.Clients, cfg.Inflight, max(cfg.Warmup, 100*time.Millisecond))
			return err
		},
		func(_, _ int, t *target) error {
			rate, lost, err := runLoad(t.addr, cfg.Clients, cfg.Inflight, cfg.Duration)
			t.rates = append(t.rates, rate)
			t.lost += lost
			return err
		})
	if err != nil {
		return nil, err
	}
	if n := game.ReceivedOf(wirea2s.TypeInfoRequest); n > 4*int64(cfg.Rounds+2) {
		return nil, fmt.Errorf("the game server was asked %d times: the answers did not come from the cache", n)
	}
	w := &benchutil.Workload{
		Unit: "answers/s", Loads: loads,
		Command: fmt.Sprintf("go run ./bench/run -only a2s -rounds %d -duration %v", cfg.Rounds, cfg.Duration),
		Comparisons: []benchutil.Comparison{
			{Target: "gg-a2s", Baseline: "bare", Goal: 0.9},
			{Target: "l4-a2s", Baseline: "bare"},
		},
	}
	if cfg.CServer != "" {
		w.Comparisons = append(w.Comparisons, benchutil.Comparison{Target: "gg-a2s", Baseline: "c", Goal: 0.9},
			benchutil.Comparison{Target: "c", Baseline: "bare"})
	}
	for _, t := range targets {
		w.Targets = append(w.Targets, &benchutil.Target{Name: t.name, Label: t.label, Rates: t.rates,
			Extra: fmt.Sprintf("%d lost", t.lost)})
	}
	return w, nil
}

// runLoad keeps inflight queries outstanding on each of clients sockets
// for d and returns the answers per second (echo: queries of two round
// trips each) and the datagrams never answered.
func runLoad(addr string, clients, inflight int, d time.Duration) (float64, int, error) {
	first, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)
	again, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest, HasChallenge: true}).AppendTo(nil)
	var answers, lost atomic.Int64
	_, err := benchutil.ClosedLoop(addr, clients, d, func(_ int, c *benchutil.LoopConn) benchutil.Loop {
		_ = c.SetReadBuffer(1 << 20)
		out := make([]byte, len(again))
		n := 0
		return benchutil.Loop{
			Fill: func() error {
				for range inflight {
					_ = c.Send(first)
				}
				return nil
			},
			Answer: func(b []byte) error {
				switch {
				case len(b) == wirea2s.ChallengeLen && b[4] == byte(wirea2s.TypeChallenge):
					// The shield's challenge: ask again with it.
					copy(out, again)
					copy(out[len(out)-4:], b[5:9])
					_ = c.Send(out)
				case len(b) == len(first):
					// The echo of a first request plays the challenge.
					_ = c.Send(again)
				default: // an answer (or the echo of a request with a challenge)
					n++
					_ = c.Send(first)
				}
				return nil
			},
			Done: func() {
				answers.Add(int64(n))
				lost.Add(int64(c.Sent - c.Received))
			},
		}
	})
	if err != nil {
		return 0, 0, err
	}
	return float64(answers.Load()) / d.Seconds(), int(lost.Load()), nil
}
