package freeciv

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
	"github.com/gamegate/gamegate/wire/freeciv"
)

func joinReq(t testing.TB) []byte {
	t.Helper()
	b, err := (&freeciv.JoinReq{Username: []byte("u"), Capability: []byte("+Freeciv-3.0-network"), Major: 3, Patch: 6}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func packet(t testing.TB, width int, ptype uint16, body string) []byte {
	t.Helper()
	b, err := freeciv.AppendPacket(nil, width, ptype, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// feed passes stream through the guard in pieces of size n and returns what
// it released.
func feed(t *testing.T, g *Guard, stream []byte, n int) ([]byte, error) {
	t.Helper()
	var out []byte
	for len(stream) > 0 {
		k := min(n, len(stream))
		rel, err := g.Client(stream[:k])
		if err != nil {
			return out, err
		}
		out = append(out, rel...)
		stream = stream[k:]
	}
	return out, nil
}

func TestGuardReleasesWholePacketsOnly(t *testing.T) {
	stream := append(joinReq(t), packet(t, 1, 9, "hello")...)
	for _, n := range []int{1, 3, 7, len(stream)} {
		g := mustGuard(t, GuardConfig{})
		got, err := feed(t, g, stream, n)
		if err != nil || !bytes.Equal(got, stream) {
			t.Fatalf("pieces of %d: got %d bytes (%v), want the stream unchanged", n, len(got), err)
		}
	}
	// A partial packet is held back.
	g := mustGuard(t, GuardConfig{})
	rel, err := g.Client(stream[:len(stream)-2])
	if err != nil || !bytes.Equal(rel, joinReq(t)) {
		t.Fatalf("a stream ending mid-packet: released %d bytes (%v), want just the JOIN_REQ", len(rel), err)
	}
}

func TestGuardViolations(t *testing.T) {
	valid := joinReq(t)
	tests := []struct {
		name   string
		stream []byte
		reason string
	}{
		{"first packet not a JOIN_REQ", packet(t, 1, 9, "x"), "first_packet"},
		{"JOIN_REQ with a bad body", packet(t, 1, 4, "no terminators here"), "first_packet"},
		{"length over max_packet", append(bytes.Clone(valid), 0x10, 0x01, 9), "framing"},
		{"length under the header", append(bytes.Clone(valid), 0x00, 0x01), "framing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustGuard(t, GuardConfig{})
			released, err := feed(t, g, tt.stream, 5)
			var v *Violation
			if !errors.As(err, &v) || v.Reason != tt.reason {
				t.Fatalf("got %v, want a %s violation", err, tt.reason)
			}
			if len(released) > len(valid) {
				t.Fatalf("released %d bytes, more than the valid prefix", len(released))
			}
		})
	}
}

func TestGuardFollowsJoin(t *testing.T) {
	g := mustGuard(t, GuardConfig{})
	if _, err := g.Client(joinReq(t)); err != nil {
		t.Fatal(err)
	}
	reply, err := (&freeciv.JoinReply{YouCanJoin: true, Message: []byte("hi"), Capability: []byte("+x")}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The server's reply arrives in pieces, followed by a packet in the new
	// 2-byte type header.
	server := append(bytes.Clone(reply), packet(t, 2, 300, "after")...)
	for i := range server {
		g.Server(server[i : i+1])
	}
	if !g.Joined() {
		t.Fatal("the guard did not see the accepted join")
	}
	// The client now sends 2-byte-type packets: type 300 fits only there.
	p := packet(t, 2, 300, "client")
	if rel, err := g.Client(p); err != nil || !bytes.Equal(rel, p) {
		t.Fatalf("a 2-byte-type packet after the join: released %d (%v)", len(rel), err)
	}
}

func TestGuardPacketRate(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	g := mustGuard(t, GuardConfig{PacketRate: 10, PacketBurst: 3, Now: clock.Now})
	if _, err := g.Client(joinReq(t)); err != nil {
		t.Fatal(err)
	}
	p := packet(t, 1, 9, "x")
	for i := range 2 {
		if _, err := g.Client(p); err != nil {
			t.Fatalf("packet %d within the burst: %v", i, err)
		}
	}
	_, err := g.Client(p)
	var v *Violation
	if !errors.As(err, &v) || v.Reason != "rate" {
		t.Fatalf("past the burst: got %v, want a rate violation", err)
	}
	g2 := mustGuard(t, GuardConfig{PacketRate: 10, PacketBurst: 3, Now: clock.Now})
	g2.Client(joinReq(t))
	for i := range 50 {
		clock.Advance(100 * time.Millisecond)
		if _, err := g2.Client(p); err != nil {
			t.Fatalf("packet %d at the sustained rate: %v", i, err)
		}
	}
}

func BenchmarkGuardClient(b *testing.B) {
	var stream []byte
	for len(stream) < 64<<10 {
		stream, _ = freeciv.AppendPacket(stream, 1, 9, make([]byte, 200))
	}
	join := joinReq(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		g := mustGuard(b, GuardConfig{})
		g.Client(join)
		for p := stream; len(p) > 0; {
			k := min(1460, len(p))
			if _, err := g.Client(p[:k]); err != nil {
				b.Fatal(err)
			}
			p = p[k:]
		}
	}
}

func mustGuard(t testing.TB, cfg GuardConfig) *Guard {
	t.Helper()
	g, err := NewGuard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNewGuardRefusesBadRates(t *testing.T) {
	for _, cfg := range []GuardConfig{{PacketRate: -1}, {PacketRate: 1e-12, PacketBurst: 1}, {PacketRate: 1, PacketBurst: 1 << 62}} {
		if _, err := NewGuard(cfg); err == nil || !strings.Contains(err.Error(), "packet_") {
			t.Errorf("%+v: got %v, want an error naming packet_rate or packet_burst", cfg, err)
		}
	}
}
