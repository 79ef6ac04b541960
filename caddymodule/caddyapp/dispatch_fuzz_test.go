package caddyapp

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	_ "github.com/gamegate/gamegate/caddymodule/caddya2s"
	"github.com/gamegate/gamegate/caddymodule/caddygqp"
	_ "github.com/gamegate/gamegate/caddymodule/caddyqos"
	_ "github.com/gamegate/gamegate/caddymodule/caddyrelay"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/relay"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
	wireqos "github.com/gamegate/gamegate/wire/qos"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

const dispatchSecret = "fuzz-dispatch-secret-0123456789abcdef"

// dispatchProtocols provisions a gamegate app serving QoS, relay, GQP and
// the A2S shield on one port, as the Caddyfile configures it, and returns its protocols in
// the order the server offers them each datagram.
func dispatchProtocols(tb testing.TB) ([]dgram.Protocol, *caddygqp.GQPProtocol) {
	tb.Helper()
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(`{
	gamegate {
		udp 127.0.0.1:9 {
			qos {
				rate 1000
				burst 1000
			}
			relay {
				secrets `+dispatchSecret+`
				name fuzz-dispatch
			}
			gqp {
				identify fuzz 1.0 1
				login admin hunter2
				upstream_timeout 100ms
				command status {
					url http://127.0.0.1:1/status
				}
				command motd {
					record message "a message longer than most queries, to tempt amplification"
				}
				command kick {
					url http://127.0.0.1:1/kick
					protected
				}
			}
			a2s_shield 127.0.0.1:1 {
				attempt_timeout 100ms
			}
		}
	}
}
`), nil)
	if err != nil {
		tb.Fatal(err)
	}
	var full struct {
		Apps struct {
			Gamegate json.RawMessage `json:"gamegate"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(cfg, &full); err != nil {
		tb.Fatal(err)
	}
	app := new(App)
	if err := json.Unmarshal(full.Apps.Gamegate, app); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	tb.Cleanup(cancel)
	if err := app.Provision(ctx); err != nil {
		tb.Fatal(err)
	}
	protocols := app.UDP[0].server.Protocols
	return protocols, protocols[2].(*caddygqp.GQPProtocol)
}

// dispatchSeeds are valid and near-valid datagrams of each protocol.
func dispatchSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	seeds := [][]byte{{}, {0x59}, {0xDA, 0x72}, []byte(`\`)}
	qos, err := (&wireqos.Request{Title: []byte("QoS request"), Custom: []byte{1, 2, 0, 9, 9, 9, 9, 9, 9, 9, 9}}).AppendTo(nil)
	if err != nil {
		tb.Fatal(err)
	}
	seeds = append(seeds, qos)

	sealer, err := relay.NewSealer([]byte(dispatchSecret))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := relay.NewAllocation(2, "fuzz", time.Now().Add(time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := sealer.Seal(a)
	if err != nil {
		tb.Fatal(err)
	}
	o := wirerelay.Options{Padded: true}
	bind := wirerelay.Bind{Nonce: 1, ConnectionData: data}
	if err := bind.Sign(a.Key[:], o); err != nil {
		tb.Fatal(err)
	}
	for _, m := range []interface{ AppendTo([]byte) ([]byte, error) }{
		&wirerelay.Ping{AllocationID: a.ID, Number: 1},
		&wirerelay.ConnectRequest{AllocationID: a.ID, ToConnectionData: data},
		&wirerelay.Relay{From: a.ID, To: a.ID, Content: []byte("hello")},
		&wirerelay.Close{AllocationID: a.ID},
	} {
		b, err := m.AppendTo(nil)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	b, err := bind.AppendWith(nil, o)
	if err != nil {
		tb.Fatal(err)
	}
	seeds = append(seeds, b)

	for _, cmds := range [][]string{
		{"identify"}, {"echo", "a", "b"}, {"motd"}, {"status"}, {"status", "x"}, {"kick", "bob"},
		{"challenge", "admin", "wrong"}, {"validate", "00"}, {"extensions"}, {"identify", "motd", "pad", "................"},
	} {
		b, err := wiregqp.QueryOf(cmds[0], cmds[1:]...).AppendTo(nil)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}

	// A2S requests, and the legacy challenge request bare and padded.
	for _, q := range []wirea2s.Request{
		{Type: wirea2s.TypeInfoRequest}, {Type: wirea2s.TypeInfoRequest, Challenge: 7, HasChallenge: true},
		{Type: wirea2s.TypePlayerRequest, Challenge: wirea2s.NoChallenge, HasChallenge: true},
		{Type: wirea2s.TypeRulesRequest, Challenge: 7, HasChallenge: true},
		{Type: wirea2s.TypeChallengeRequest}, {Type: wirea2s.TypeChallengeRequest, Challenge: wirea2s.NoChallenge, HasChallenge: true},
	} {
		b, err := q.AppendTo(nil)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// dispatchSource is the source address a fuzz input names: 16 bytes an
// IPv6 address, 4 an IPv4 one, anything else an address outside loopback.
func dispatchSource(addr []byte, port uint16) netip.AddrPort {
	switch {
	case len(addr) >= 16:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(addr[:16])), port)
	case len(addr) >= 4:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(addr[:4])), port)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, 9}), port)
}

// FuzzDispatch sends random datagrams from random sources through the
// protocols of one port serving QoS, relay, GQP and the A2S shield, as a
// reader does: no panic, and a source the GQP responder neither trusts nor
// has validated never gets back more bytes than it sent (QoS and the relay
// never validate anyone beyond that: a relay answer to an unbound source
// is an ERROR no longer than its message, and forwarding sends no more
// than it received; the A2S shield answers more only to a source that
// sent the challenge it was given, which fuzzing does not guess).
func FuzzDispatch(f *testing.F) {
	protocols, g := dispatchProtocols(f)
	for _, s := range dispatchSeeds(f) {
		f.Add([]byte{203, 0, 113, 7}, uint16(4000), s)
		f.Add([]byte{127, 0, 0, 1}, uint16(4001), s)
		f.Add(netip.MustParseAddr("2001:db8::7").AsSlice(), uint16(4002), s)
		f.Add(netip.MustParseAddr("::ffff:198.51.100.1").AsSlice(), uint16(4003), s)
	}
	f.Fuzz(func(t *testing.T, addr []byte, port uint16, datagram []byte) {
		if len(datagram) > dgram.MaxDatagram {
			return // the server drops it before any protocol sees it
		}
		src := dispatchSource(addr, port)
		sent, _ := dgram.Dispatch(protocols, src, datagram)
		validated := g.Server().Trusted(src.Addr()) || g.Server().Authorized(netip.AddrPortFrom(src.Addr().Unmap(), src.Port()))
		if validated {
			return
		}
		total := 0
		for _, d := range sent {
			total += len(d.Data)
		}
		if total > len(datagram) {
			t.Fatalf("from unvalidated %s, %d bytes %x: sent back %d bytes in %d datagrams", src, len(datagram), datagram, total, len(sent))
		}
	})
}

// The seeds exercise every protocol: each is matched, and the valid ones
// from a trusted source are answered.
func TestDispatchSeedsReachEveryProtocol(t *testing.T) {
	protocols, _ := dispatchProtocols(t)
	src := netip.MustParseAddrPort("127.0.0.1:4000")
	answered := map[int]int{} // protocol index → datagrams answered
	for _, s := range dispatchSeeds(t) {
		if _, matched := dgram.Dispatch(protocols, src, s); !matched {
			continue
		}
		for i, p := range protocols {
			if p.Match(s) {
				if sent, _ := dgram.Dispatch(protocols, src, s); len(sent) > 0 {
					answered[i]++
				}
				break
			}
		}
	}
	for i, name := range []string{"qos", "relay", "gqp", "a2s_shield"} {
		if answered[i] == 0 {
			t.Errorf("no seed is answered by %s", name)
		}
	}
}
