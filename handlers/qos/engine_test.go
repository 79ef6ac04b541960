package qos

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

func request(t testing.TB, title string, custom ...byte) []byte {
	t.Helper()
	r := wireqos.Request{Title: []byte(title), Custom: custom}
	b, err := r.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func src(s string) Source { return Source(netip.MustParseAddrPort(s)) }

type harness struct {
	clock  *testutil.Clock
	engine *Engine
}

func newHarness(t *testing.T, cfg Config, limit int) *harness {
	t.Helper()
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	table := NewSourceTable(limit, clock.Now, 0)
	e, err := NewEngine(cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{clock: clock, engine: e}
}

func baseConfig() Config {
	return Config{Rate: 1, Burst: 3, BanUnits: 2, BanDuration: duration.Duration(time.Minute)}
}

func (h *harness) send(t *testing.T, s Source, req []byte) ([]byte, Verdict) {
	t.Helper()
	resp, v := h.engine.Handle(s, req, nil)
	if v.Answered() != (resp != nil) {
		t.Fatalf("verdict %v with response %x: an answering verdict must come with a response and only then", v, resp)
	}
	if resp != nil && len(resp) >= len(req) {
		t.Fatalf("response of %d bytes to a request of %d: must be smaller", len(resp), len(req))
	}
	return resp, v
}

func TestEchoesCustomData(t *testing.T) {
	h := newHarness(t, baseConfig(), 10)
	custom := []byte{1, 0xEF, 0xBE, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	resp, v := h.send(t, src("192.0.2.1:4000"), request(t, "QoS request", custom...))
	if v != Answered {
		t.Fatalf("verdict: got %v, want %v", v, Answered)
	}
	want := append([]byte{0x95, 0x00}, custom...)
	if !bytes.Equal(resp, want) {
		t.Fatalf("response: got %x, want %x", resp, want)
	}
}

func TestDropsMalformed(t *testing.T) {
	h := newHarness(t, baseConfig(), 10)
	tests := []struct {
		name string
		in   []byte
		want Verdict
	}{
		{"empty", nil, DroppedTooShort},
		{"two bytes", []byte{0x59, 0x00}, DroppedTooShort},
		{"wrong magic", []byte{0x95, 0x00, 0x01}, DroppedMagic},
		{"flow nibble set", []byte{0x59, 0x01, 0x01}, DroppedFlow},
		{"version 1", []byte{0x59, 0x10, 0x01}, DroppedVersion},
		{"title length zero", []byte{0x59, 0x00, 0x00, 0x41}, DroppedTitleLength},
		{"title past the end", []byte{0x59, 0x00, 0x09, 0x41}, DroppedTitleLength},
		{"title not utf-8", []byte{0x59, 0x00, 0x02, 0xC0}, DroppedTitleEncoding},
		{"1501 bytes", append([]byte{0x59, 0x00, 0x01}, make([]byte, 1498)...), DroppedTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, v := h.send(t, src("192.0.2.1:4000"), tt.in); v != tt.want {
				t.Fatalf("got %v, want %v", v, tt.want)
			}
		})
	}
	if got := h.engine.Table().Len(); got != 0 {
		t.Fatalf("malformed datagrams created %d source entries, want 0", got)
	}
}

func TestRateLimitBansOnceThenSilence(t *testing.T) {
	h := newHarness(t, baseConfig(), 10)
	s := src("192.0.2.7:5000")
	req := request(t, "game", 1, 2, 3)
	for i := range 3 {
		if _, v := h.send(t, s, req); v != Answered {
			t.Fatalf("request %d within the burst: got %v, want %v", i, v, Answered)
		}
	}
	resp, v := h.send(t, s, req)
	if v != BannedRate {
		t.Fatalf("request over the burst: got %v, want %v", v, BannedRate)
	}
	var r wireqos.Response
	if err := r.Decode(resp); err != nil {
		t.Fatal(err)
	}
	if !r.Flow.IsBan() || r.Flow.Units() != 2 {
		t.Fatalf("flow control: got %v, want a ban of 2 units", r.Flow)
	}
	for i := range 5 {
		h.clock.Advance(10 * time.Second)
		if _, v := h.send(t, s, req); v != DroppedBanned {
			t.Fatalf("request %d during the ban: got %v, want %v", i, v, DroppedBanned)
		}
	}
	// Other sources are not affected.
	if _, v := h.send(t, src("192.0.2.8:5000"), req); v != Answered {
		t.Fatalf("another source: got %v, want %v", v, Answered)
	}
	h.clock.Advance(10*time.Second + time.Nanosecond) // 60 s since the ban began
	for i := range 3 {
		if _, v := h.send(t, s, req); v != Answered {
			t.Fatalf("request %d after the ban: got %v, want %v", i, v, Answered)
		}
	}
}

func TestRateRefills(t *testing.T) {
	h := newHarness(t, Config{Rate: 10, Burst: 2, BanUnits: 1, BanDuration: duration.Duration(time.Minute)}, 10)
	s := src("192.0.2.9:1")
	req := request(t, "game")
	// 100 requests spaced at the sustained rate never trip the limit.
	for i := range 100 {
		if _, v := h.send(t, s, req); v != Answered {
			t.Fatalf("request %d at the sustained rate: got %v, want %v", i, v, Answered)
		}
		h.clock.Advance(100 * time.Millisecond)
	}
}

func TestBackoffBeforeBan(t *testing.T) {
	cfg := Config{Rate: 1, Burst: 10, BanUnits: 1, BanDuration: duration.Duration(time.Minute), BackoffUnits: 3}
	h := newHarness(t, cfg, 10)
	s := src("192.0.2.10:1")
	req := request(t, "game", 9)
	var got []Verdict
	for range 11 {
		_, v := h.send(t, s, req)
		got = append(got, v)
	}
	want := []Verdict{Answered, Answered, Answered, Answered, Answered,
		AnsweredBackoff, AnsweredBackoff, AnsweredBackoff, AnsweredBackoff, AnsweredBackoff, BannedRate}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	resp, _ := h.engine.Handle(src("192.0.2.11:1"), req, nil)
	for range 6 {
		resp, _ = h.engine.Handle(src("192.0.2.11:1"), req, nil)
	}
	var r wireqos.Response
	if err := r.Decode(resp); err != nil || !r.Flow.IsBackoff() || r.Flow.Units() != 3 {
		t.Fatalf("flow control: got %v (%v), want a back-off of 3 units", r.Flow, err)
	}
}

func TestCapacityBansChosenSources(t *testing.T) {
	cfg := Config{Capacity: 1, CapacityBurst: 2, BanUnits: 1, BanDuration: duration.Duration(time.Minute)}
	h := newHarness(t, cfg, 10)
	req := request(t, "game")
	if _, v := h.send(t, src("192.0.2.1:1"), req); v != Answered {
		t.Fatalf("first: got %v, want %v", v, Answered)
	}
	if _, v := h.send(t, src("192.0.2.2:1"), req); v != Answered {
		t.Fatalf("second: got %v, want %v", v, Answered)
	}
	resp, v := h.send(t, src("192.0.2.3:1"), req)
	if v != BannedCapacity {
		t.Fatalf("over capacity: got %v, want %v", v, BannedCapacity)
	}
	if resp[1]&0x8 == 0 {
		t.Fatalf("over capacity: got flow %#x, want the ban bit", resp[1])
	}
	h.clock.Advance(2 * time.Second)
	if _, v := h.send(t, src("192.0.2.3:1"), req); v != DroppedBanned {
		t.Fatalf("banned source after refill: got %v, want %v", v, DroppedBanned)
	}
	if _, v := h.send(t, src("192.0.2.1:1"), req); v != Answered {
		t.Fatalf("unbanned source after refill: got %v, want %v", v, Answered)
	}
}

func TestTitleAllowList(t *testing.T) {
	cfg := baseConfig()
	cfg.Titles = []string{"QoS request", "ワオ"}
	h := newHarness(t, cfg, 10)
	for _, tc := range []struct {
		title string
		want  Verdict
	}{{"QoS request", Answered}, {"ワオ", Answered}, {"other", DroppedTitle}, {"", DroppedTitle}} {
		if _, v := h.send(t, src("192.0.2.1:1"), request(t, tc.title)); v != tc.want {
			t.Fatalf("title %q: got %v, want %v", tc.title, v, tc.want)
		}
		h.clock.Advance(time.Second)
	}
}

func TestSourceTableIsBounded(t *testing.T) {
	const limit = 100
	h := newHarness(t, baseConfig(), limit)
	req := request(t, "game")
	for i := range 10_000 {
		s := Source(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 1))
		if _, v := h.send(t, s, req); v != Answered {
			t.Fatalf("source %d: got %v, want %v", i, v, Answered)
		}
		if n := h.engine.Table().Len(); n > limit {
			t.Fatalf("after %d sources: tracking %d, want at most %d", i+1, n, limit)
		}
	}
	if n := h.engine.Table().Len(); n != limit {
		t.Fatalf("full table: got %d entries, want %d", n, limit)
	}
	// Each source spent one request of a burst of 3 at 1/s: idle after 1 s.
	h.clock.Advance(500 * time.Millisecond)
	if n := h.engine.Table().Sweep(); n != 0 {
		t.Fatalf("sweep before the buckets refill: removed %d, want 0", n)
	}
	h.clock.Advance(time.Second)
	if n := h.engine.Table().Sweep(); n != limit {
		t.Fatalf("sweep after the buckets refill: removed %d, want %d", n, limit)
	}
	if n := h.engine.Table().Len(); n != 0 {
		t.Fatalf("after sweep: tracking %d, want 0", n)
	}
}

func TestSweepKeepsBans(t *testing.T) {
	h := newHarness(t, Config{Rate: 1, Burst: 1, BanUnits: 1, BanDuration: duration.Duration(time.Minute)}, 10)
	s := src("192.0.2.5:1")
	req := request(t, "game")
	h.send(t, s, req)
	if _, v := h.send(t, s, req); v != BannedRate {
		t.Fatalf("got %v, want %v", v, BannedRate)
	}
	h.clock.Advance(30 * time.Second)
	h.engine.Table().Sweep()
	if !h.engine.Table().Banned(s) {
		t.Fatal("sweep forgot a source that is still banned")
	}
	h.clock.Advance(31 * time.Second)
	if n := h.engine.Table().Sweep(); n != 1 || h.engine.Table().Banned(s) {
		t.Fatalf("sweep after the ban: removed %d, want 1", n)
	}
}

func TestSourceOf(t *testing.T) {
	tests := []struct {
		addr       string
		byPort     bool
		ipv6Prefix int
		want       string
	}{
		{"192.0.2.1:9", false, 0, "192.0.2.1"},
		{"192.0.2.1:9", true, 0, "192.0.2.1:9"},
		{"[::ffff:192.0.2.1]:9", false, 0, "192.0.2.1"},
		{"[::ffff:192.0.2.1]:9", false, 48, "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:9", false, 0, "2001:db8:1:2::"},
		{"[2001:db8:1:2:3:4:5:6]:9", false, 48, "2001:db8:1::"},
		{"[2001:db8:1:2:3:4:5:6]:9", false, 128, "2001:db8:1:2:3:4:5:6"},
		{"[2001:db8:1:2:3:4:5:6]:9", true, 0, "[2001:db8:1:2:3:4:5:6]:9"},
		{"[2001:db8:1:2:3:4:5:6]:9", true, 48, "[2001:db8:1:2:3:4:5:6]:9"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%d", tt.addr, tt.byPort, tt.ipv6Prefix), func(t *testing.T) {
			if got := SourceOfAddrPort(netip.MustParseAddrPort(tt.addr), tt.byPort, tt.ipv6Prefix).String(); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := baseConfig()
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string // the option the error names
	}{
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"negative burst", func(c *Config) { c.Burst = -1 }, "burst"},
		{"ban units 9", func(c *Config) { c.BanUnits = 9 }, "ban_units"},
		{"ban units -1", func(c *Config) { c.BanUnits = -1 }, "ban_units"},
		{"negative ban duration", func(c *Config) { c.BanDuration = duration.Duration(-time.Second) }, "ban_duration"},
		{"ban duration past a day", func(c *Config) { c.BanDuration = duration.Duration(25 * time.Hour) }, "ban_duration"},
		{"backoff units 8", func(c *Config) { c.BackoffUnits = 8 }, "backoff_units"},
		{"negative capacity", func(c *Config) { c.Capacity = -1 }, "capacity"},
		{"long title", func(c *Config) { c.Titles = []string{string(make([]byte, 255))} }, "titles"},
		{"empty title", func(c *Config) { c.Titles = []string{""} }, "titles"},
		{"burst overflowing at the rate", func(c *Config) { c.Rate = 0.1; c.Burst = 1 << 30 }, "burst"},
		{"default burst overflowing at a tiny rate", func(c *Config) { c.Rate = 1e-12; c.Burst = 0 }, "rate"},
		{"capacity burst overflowing", func(c *Config) { c.Capacity = 0.1; c.CapacityBurst = 1 << 30 }, "capacity_burst"},
		{"max sources past 2^30", func(c *Config) { c.MaxSources = 1<<30 + 1 }, "max_sources"},
		{"unknown source key", func(c *Config) { c.SourceKey = "mac" }, "source_key"},
		{"IPv6 prefix 16", func(c *Config) { c.ClientIPv6Prefix = 16 }, "client_ipv6_prefix"},
		{"IPv6 prefix with ip_port", func(c *Config) { c.ClientIPv6Prefix = 48; c.SourceKey = SourceKeyIPPort }, "client_ipv6_prefix"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("base config: got %v, want nil", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config (the defaults): got %v, want nil", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := baseConfig()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tt.field+" ") {
				t.Fatalf("got %v, want an error naming %s first", err, tt.field)
			}
		})
	}
}

func TestHandleAllocatesNothing(t *testing.T) {
	h := newHarness(t, Config{Rate: 1e9, Burst: 1 << 30, BanUnits: 1, BanDuration: duration.Duration(time.Minute), Capacity: 1e9, CapacityBurst: 1 << 30, Titles: []string{"QoS request"}}, 10)
	s := src("192.0.2.1:1")
	req := request(t, "QoS request", make([]byte, 11)...)
	bad := []byte{0x59, 0x00, 0x09}
	dst := make([]byte, 0, wireqos.MaxPacket)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, v := h.engine.Handle(s, req, dst[:0]); v != Answered {
			panic(v)
		}
		if _, v := h.engine.Handle(s, bad, dst[:0]); v != DroppedTitleLength {
			panic(v)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per request, want 0", allocs)
	}
}

func BenchmarkEngineHandle(b *testing.B) {
	benchmarkEngine(b, Config{Rate: 1e9, Burst: 1 << 30, BanUnits: 1, BanDuration: duration.Duration(time.Minute)})
}

// BenchmarkEngineHandleCapacity adds the global budget, which every source
// updates.
func BenchmarkEngineHandleCapacity(b *testing.B) {
	benchmarkEngine(b, Config{Rate: 1e9, Burst: 1 << 30, BanUnits: 1, BanDuration: duration.Duration(time.Minute),
		Capacity: 1e9, CapacityBurst: 1 << 30})
}

func benchmarkEngine(b *testing.B, cfg Config) {
	table := NewSourceTable(1024, nil, 0)
	e, err := NewEngine(cfg, table)
	if err != nil {
		b.Fatal(err)
	}
	req := request(b, "QoS request", make([]byte, 11)...)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, wireqos.MaxPacket)
		s := src(fmt.Sprintf("192.0.2.%d:1", time.Now().UnixNano()%250))
		for pb.Next() {
			dst, _ = e.Handle(s, req, dst[:0])
		}
	})
}
