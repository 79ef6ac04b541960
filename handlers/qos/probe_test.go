package qos

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/testutil"
	wireqos "github.com/gamegate/gamegate/wire/qos"
)

var testProbeKey = bytes.Repeat([]byte{0x42}, probeKeySize)

// probeRequest is a health check's request signed at at with key.
func probeRequest(t testing.TB, key []byte, at time.Time) []byte {
	t.Helper()
	custom := make([]byte, probeLen)
	custom[0] = 1
	binary.LittleEndian.PutUint16(custom[1:], 0xbeef)
	newProber(key).sign(custom, at)
	return request(t, "gamegate health check", custom...)
}

// A forged burst from the health checker's address bans that address; the
// checker's probes are answered all the same, and change nothing of the
// ban. Probes with another key, stale or altered are ordinary requests.
func TestProbeAnsweredThroughBan(t *testing.T) {
	h := newHarness(t, baseConfig(), 10)
	cfg := baseConfig()
	cfg.Titles = []string{"QoS request"}
	cfg.ProbeKey = testProbeKey
	cfg.Now = h.clock.Now
	e, err := NewEngine(cfg, h.engine.Table())
	if err != nil {
		t.Fatal(err)
	}
	h.engine = e
	checker := src("127.0.0.1:0")
	forged := request(t, "QoS request", make([]byte, 11)...)
	for range 4 {
		h.send(t, checker, forged)
	}
	if _, v := h.send(t, checker, forged); v != DroppedBanned {
		t.Fatalf("forged requests past the burst: got %v, want the source banned", v)
	}
	probe := probeRequest(t, testProbeKey, h.clock.Now())
	for i := range 10 {
		resp, v := h.send(t, checker, probe)
		var r wireqos.Response
		if v != AnsweredProbe || r.Decode(resp) != nil || r.Flow != wireqos.FlowNone || !bytes.Equal(r.Custom, probe[len(probe)-probeLen:]) {
			t.Fatalf("probe %d from the banned address: got %v %x, want it echoed without flow control", i, v, resp)
		}
	}
	if !h.engine.Table().Banned(checker) {
		t.Fatal("the probes lifted the ban: they must not touch the source's state")
	}
	altered := bytes.Clone(probe)
	altered[len(altered)-1] ^= 1
	for name, req := range map[string][]byte{
		"another key": probeRequest(t, bytes.Repeat([]byte{1}, probeKeySize), h.clock.Now()),
		"stale":       probeRequest(t, testProbeKey, h.clock.Now().Add(-ProbeWindow-time.Second)),
		"future":      probeRequest(t, testProbeKey, h.clock.Now().Add(ProbeWindow+time.Second)),
		"altered":     altered,
	} {
		if _, v := h.send(t, checker, req); v == AnsweredProbe {
			t.Errorf("%s: answered as a probe", name)
		}
	}
	// An engine without the key treats probes as requests.
	if _, v := newHarness(t, baseConfig(), 10).send(t, checker, probe); v != Answered {
		t.Fatalf("a probe to an engine without the key: got %v, want an ordinary answer", v)
	}
}

// Replayed probes are answered as probes at most ProbeBurst at once; past
// that they are ordinary requests, limited and banned as any.
func TestProbeReplayBounded(t *testing.T) {
	h := newHarness(t, baseConfig(), 10)
	cfg := baseConfig()
	cfg.ProbeKey, cfg.Now = testProbeKey, h.clock.Now
	e, err := NewEngine(cfg, h.engine.Table())
	if err != nil {
		t.Fatal(err)
	}
	probe := probeRequest(t, testProbeKey, h.clock.Now())
	probes := 0
	for range ProbeBurst + 100 {
		if _, v := e.Handle(src("192.0.2.9:1"), probe, nil); v == AnsweredProbe {
			probes++
		}
	}
	if probes != ProbeBurst {
		t.Fatalf("%d replays at once: %d answered as probes, want %d", ProbeBurst+100, probes, ProbeBurst)
	}
}

func TestProbeAllocatesNothing(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	e, err := NewEngine(Config{Rate: 1, Burst: 1, BanUnits: 1, BanDuration: duration.Duration(time.Minute), ProbeKey: testProbeKey, Now: func() time.Time { return clock }}, NewSourceTable(10, func() time.Time { return clock }, 0))
	if err != nil {
		t.Fatal(err)
	}
	probe := probeRequest(t, testProbeKey, clock)
	dst := make([]byte, 0, wireqos.MaxPacket)
	e.Handle(src("192.0.2.1:1"), probe, dst[:0])
	// The MACs are pooled: under the race detector sync.Pool drops a share
	// of what is put back, so only the count without it is held to 0.
	if allocs := testing.AllocsPerRun(100, func() { e.Handle(src("192.0.2.1:1"), probe, dst[:0]) }); allocs != 0 && !testutil.Race {
		t.Fatalf("got %v allocations per probe, want 0", allocs)
	}
}

// FuzzProbeVerify: any custom data is refused or accepted without a panic,
// and only a signed probe is accepted.
func FuzzProbeVerify(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	p := newProber(testProbeKey)
	signed := make([]byte, probeLen)
	p.sign(signed, now)
	f.Add(signed)
	f.Add([]byte(probeMarker))
	f.Add(make([]byte, probeLen))
	f.Fuzz(func(t *testing.T, custom []byte) {
		if p.verify(custom, now) && !bytes.Equal(custom[probeSigned:], signed[probeSigned:]) && bytes.Equal(custom[:probeSigned], signed[:probeSigned]) {
			t.Fatalf("accepted %x with another MAC", custom)
		}
	})
}
