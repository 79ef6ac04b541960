package tests

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/caddymodule/caddya2s"
	"github.com/gamegate/gamegate/caddymodule/caddygqp"
	"github.com/gamegate/gamegate/caddymodule/caddyqos"
	"github.com/gamegate/gamegate/caddymodule/caddyrelay"
	"github.com/gamegate/gamegate/handlers/a2s"
	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/internal/testutil/a2sserver"
	"github.com/gamegate/gamegate/internal/testutil/testcaddy"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// transportsCaddyfile serves QoS, the relay, GQP and the A2S shield (of
// the game server at game) twice from one Caddyfile: on a UDP server of
// the gamegate app at appAddr, and on caddy-l4 routes at l4Addr. Both
// transports run the same protocol implementations (handlers/qos,
// handlers/relay, handlers/gqp, handlers/a2s), which this file's tests hold
// them to.
func transportsCaddyfile(appAddr, l4Addr, game string) string {
	return fmt.Sprintf(`{
	gamegate {
		udp %[1]s {
			qos {
				rate 1
				burst 3
			}
			relay {
				secrets {env.GAMEGATE_TEST_RELAY_SECRET}
				name transports-app
			}
			gqp {
				identify transports 1.0 1
				command motd {
					record message hello
				}
			}
			a2s_shield %[3]s
		}
	}
	layer4 {
		udp/%[2]s {
			idle_timeout 10s
			@qos qos
			route @qos {
				qos {
					rate 1
					burst 3
				}
			}
			@relay relay
			route @relay {
				relay {
					secrets {env.GAMEGATE_TEST_RELAY_SECRET}
					name transports-l4
				}
			}
			@gqp gqp
			route @gqp {
				gqp {
					identify transports 1.0 1
					command motd {
						record message hello
					}
				}
			}
			@a2s a2s
			route @a2s {
				a2s_shield %[3]s
			}
		}
	}
}
`, appAddr, l4Addr, game)
}

// clientScript is what a protocol's clients send and receive on one transport.
type clientScript func(t *testing.T, addr string) [][]byte

// qosExchange sends five requests from one source to a QoS service of
// rate 1 and burst 3: three answers, a ban, then silence.
func qosExchange(t *testing.T, addr string) [][]byte {
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	var got [][]byte
	for seq := range uint8(5) {
		c.Send(unityRequest(seq, 7, 42+uint64(seq)))
		if seq < 4 {
			b, ok := c.Recv(replyTimeout)
			if !ok {
				t.Fatalf("request %d: no answer", seq)
			}
			got = append(got, b)
		}
	}
	if b, ok := c.Recv(200 * time.Millisecond); ok {
		got = append(got, b) // a banned source must get nothing: fails the comparison
	}
	return got
}

// relayExchange binds a host and a joiner, pings, connects the joiner to
// the host and relays a message each way, with the same allocations and
// nonces on every transport, so the bytes must be equal.
func relayExchange(host, joiner *relay.Allocation, hostData, joinerData []byte) clientScript {
	return func(t *testing.T, addr string) [][]byte {
		h := testutil.DialUDP(t, "127.0.0.1:0", addr)
		j := testutil.DialUDP(t, "127.0.0.1:0", addr)
		recv := func(c *testutil.UDPClient, what string) []byte {
			b, ok := c.Recv(replyTimeout)
			if !ok {
				t.Fatalf("%s: nothing received", what)
			}
			return b
		}
		var got [][]byte
		h.Send(rawBind(t, host, hostData, 1))
		got = append(got, recv(h, "host's BIND"))
		j.Send(rawBind(t, joiner, joinerData, 1))
		got = append(got, recv(j, "joiner's BIND"))
		j.Send(testutil.Encode(t, &wirerelay.Ping{AllocationID: joiner.ID, Number: 9}))
		got = append(got, recv(j, "PING"))
		j.Send(testutil.Encode(t, &wirerelay.ConnectRequest{AllocationID: joiner.ID, ToConnectionData: hostData}))
		got = append(got, recv(j, "CONNECT_REQUEST"))
		toHost := testutil.Encode(t, &wirerelay.Relay{From: joiner.ID, To: host.ID, Content: []byte("to the host")})
		j.Send(toHost)
		got = append(got, recv(h, "RELAY to the host"))
		h.Send(testutil.Encode(t, &wirerelay.Relay{From: host.ID, To: joiner.ID, Content: []byte("to the joiner")}))
		got = append(got, recv(j, "RELAY to the joiner"))
		if !bytes.Equal(got[0], bindReceived) || !bytes.Equal(got[4], toHost) {
			t.Fatalf("got BIND reply %x and relayed %x; want %x and the RELAY unchanged", got[0], got[4], bindReceived)
		}
		return got
	}
}

// gqpQueries asks identify, echo and a static command, each in its own
// query from one source.
func gqpQueries(t *testing.T, addr string) [][]byte {
	c := testutil.DialUDP(t, "127.0.0.1:0", addr)
	var got [][]byte
	for _, q := range []*wiregqp.Query{wiregqp.QueryOf("identify"), wiregqp.QueryOf("echo", "a", "b"), wiregqp.QueryOf("motd")} {
		c.Send(testutil.Encode(t, q))
		b, ok := c.Recv(replyTimeout)
		if !ok {
			t.Fatalf("query %q: no answer", q.Commands[0].Name)
		}
		got = append(got, b)
	}
	return got
}

// a2sExchange asks A2S_INFO and A2S_PLAYER through the shield's challenge
// (which differs per source, so the answers are compared, not the
// challenges).
func a2sExchange(t *testing.T, addr string) [][]byte {
	c := &a2s.Client{Timeout: replyTimeout}
	var got [][]byte
	for _, typ := range []wirea2s.Type{wirea2s.TypeInfoRequest, wirea2s.TypePlayerRequest} {
		a, err := c.Query(t.Context(), addr, typ)
		if err != nil {
			t.Fatalf("%c: %v", typ, err)
		}
		got = append(got, a.Message)
	}
	return got
}

// TestDatagramProtocolsServeAlikeOnAppAndLayer4 runs each datagram
// protocol through the gamegate app and through a caddy-l4 route of one
// Caddy, from one Caddyfile, and requires the same answers, byte for byte:
// one implementation serves both.
func TestDatagramProtocolsServeAlikeOnAppAndLayer4(t *testing.T) {
	t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
	appAddr, l4Addr := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	game := a2sserver.Start(t, a2sserver.Config{Info: a2sInfo("Transports"), Players: a2sPlayers, InfoChallenge: true})
	testcaddy.Start(t, transportsCaddyfile(appAddr, l4Addr, game.Addr))

	sealer, err := relay.NewSealer([]byte(relaySecret))
	if err != nil {
		t.Fatal(err)
	}
	env := &relayEnv{sealer: sealer} // allocations only: the same on both transports
	host, hostData := env.allocation(t, 4)
	joiner, joinerData := env.allocation(t, 4)

	for _, tc := range []struct {
		protocol     string
		clientScript clientScript
		want         int // datagrams each transport must return
	}{
		{"qos", qosExchange, 4},
		{"relay", relayExchange(host, joiner, hostData, joinerData), 6},
		{"gqp", gqpQueries, 3},
		{"a2s_shield", a2sExchange, 2},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			app := tc.clientScript(t, appAddr)
			l4 := tc.clientScript(t, l4Addr)
			if len(app) != tc.want || len(l4) != tc.want {
				t.Fatalf("got %d datagrams from the app and %d from the layer4 route, want %d each", len(app), len(l4), tc.want)
			}
			for i := range app {
				if !bytes.Equal(app[i], l4[i]) {
					t.Fatalf("datagram %d: the app sent %x, the layer4 route %x", i, app[i], l4[i])
				}
			}
			t.Logf("%s: %d datagrams, equal on both transports", tc.protocol, len(app))
		})
	}
}

// TestLayer4AdapterStartsNoGoroutinePerAssociation: caddy-l4 runs one
// goroutine per client address, which runs the route's handler; the
// adapter serving QoS, the relay, GQP and the A2S shield there adds none
// (the GQP and A2S handlers each ran a goroutine of their own per
// association before; their workers are now a fixed few), and the app's
// UDP server none at all.
//
// The test runs alone in a fresh process (runIsolated): caddy-l4 strands
// association goroutines of servers other tests stopped.
func TestLayer4AdapterStartsNoGoroutinePerAssociation(t *testing.T) {
	if runIsolated(t) {
		return
	}
	t.Setenv("GAMEGATE_TEST_RELAY_SECRET", relaySecret)
	appAddr, l4Addr := testutil.FreeUDPAddr(t), testutil.FreeUDPAddr(t)
	testcaddy.Start(t, transportsCaddyfile(appAddr, l4Addr, "127.0.0.1:9")) // the shield only challenges here
	qosHandle := funcName((*caddyqos.QoSEcho).Handle)
	relayHandle := funcName((*caddyrelay.Relay).Handle)
	gqpHandle := funcName((*caddygqp.GQPResponder).Handle)
	a2sHandle := funcName((*caddya2s.A2SShield).Handle)
	handles := []string{qosHandle, relayHandle, gqpHandle, a2sHandle}
	ping, _ := (&wirerelay.Ping{}).AppendTo(nil)
	a2sInfoRequest, _ := (&wirea2s.Request{Type: wirea2s.TypeInfoRequest}).AppendTo(nil)

	const clients = 20
	for _, tc := range []struct {
		name    string
		addr    string
		request []byte
		handle  string // the frame of caddy-l4's association goroutines; "": no such goroutine
	}{
		{"qos on layer4", l4Addr, unityRequest(1, 1, 1), qosHandle},
		{"relay on layer4", l4Addr, ping, relayHandle},
		{"gqp on layer4", l4Addr, testutil.Encode(t, wiregqp.QueryOf("identify")), gqpHandle},
		{"a2s_shield on layer4", l4Addr, a2sInfoRequest, a2sHandle},
		{"qos on the app", appAddr, unityRequest(1, 1, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A first client makes what each listener has once (the QoS
			// source table of the layer4 listener, with its sweeper).
			first := testutil.DialUDP(t, "127.0.0.9:0", tc.addr)
			first.Send(tc.request)
			if _, ok := first.Recv(replyTimeout); !ok {
				t.Fatal("the first client: no answer")
			}
			before, inHandle := runtime.NumGoroutine(), goroutinesIn(handles...)
			ours := gamegateGoroutines(handles...)
			for i := range clients {
				c := testutil.DialUDP(t, fmt.Sprintf("127.0.0.%d:0", 10+i), tc.addr)
				c.Send(tc.request)
				if _, ok := c.Recv(replyTimeout); !ok {
					t.Fatalf("client %d: no answer", i)
				}
			}
			// Each answer came from its association's goroutine, which
			// is now waiting for the next datagram (idle_timeout 10s).
			perAssociation := 0
			if tc.handle != "" {
				perAssociation = 1
			}
			if got, want := goroutinesIn(handles...)-inHandle, clients*perAssociation; got != want {
				t.Fatalf("goroutines running the handler: got %d more, want %d (one per association)", got, want)
			}
			if got := gamegateGoroutines(handles...); got != ours {
				t.Fatalf("other goroutines in gamegate's code: got %d, want %d as before the clients came", got, ours)
			}
			grown := runtime.NumGoroutine() - before
			if grown > clients*perAssociation {
				t.Fatalf("%d clients grew the goroutines by %d, want at most %d", clients, grown, clients*perAssociation)
			}
			t.Logf("%d clients: %d goroutines more (%d per association)", clients, grown, perAssociation)
		})
	}
}

// gamegateGoroutines counts the goroutines with a frame in gamegate's code
// and none of the frames in except.
func gamegateGoroutines(except ...string) int {
	n := 0
	for g := range strings.SplitSeq(goroutineDump(), "\n\n") {
		if !strings.Contains(g, "github.com/gamegate/gamegate/") || strings.Contains(g, "testing.tRunner") {
			continue
		}
		skip := false
		for _, f := range except {
			skip = skip || strings.Contains(g, f+"(")
		}
		if !skip {
			n++
		}
	}
	return n
}

func goroutineDump() string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	return buf.String()
}
