package a2s

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

func newTestLimits(t *testing.T, l Limits) (*answerLimits, *testutil.Clock) {
	t.Helper()
	clock := testutil.NewClock(time.Unix(1e9, 0))
	a, err := newAnswerLimits(l, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return a, clock
}

// TestAnswerLimitsPerSource: a source gets its burst of answers and of
// bytes, then the rates; another source is apart; the ports of one
// address and the addresses of one IPv6 /64 are one source.
func TestAnswerLimitsPerSource(t *testing.T) {
	a, clock := newTestLimits(t, Limits{Rate: 2, Burst: 3, ByteRate: 1000, ByteBurst: 3000, TotalByteRate: 1 << 20})
	src := netip.MustParseAddrPort("192.0.2.1:27005")
	for i := range 3 {
		if v := a.admit(src, 100); v != Answered {
			t.Fatalf("answer %d of the burst: got %v, want answered", i, v)
		}
	}
	if v := a.admit(netip.MustParseAddrPort("192.0.2.1:4000"), 100); v != DroppedSourceLimit {
		t.Fatalf("fourth answer, from another port: got %v, want %v", v, DroppedSourceLimit)
	}
	if v := a.admit(netip.MustParseAddrPort("[::ffff:192.0.2.2]:1"), 100); v != Answered {
		t.Fatalf("another source: got %v, want answered", v)
	}
	clock.Advance(500 * time.Millisecond) // one answer at 2 a second
	if v := a.admit(src, 100); v != Answered {
		t.Fatalf("after 500ms: got %v, want answered", v)
	}
	// Bytes: 2700 of 3000 at once, then 400 is too many until 100 ms more.
	b := netip.MustParseAddrPort("[2001:db8:1:2::1]:5")
	if v := a.admit(b, 2700); v != Answered {
		t.Fatalf("2700 bytes: got %v", v)
	}
	if v := a.admit(netip.MustParseAddrPort("[2001:db8:1:2:ffff::9]:6"), 400); v != DroppedSourceLimit {
		t.Fatalf("400 more bytes from the same /64: got %v, want %v", v, DroppedSourceLimit)
	}
	if v := a.admit(netip.MustParseAddrPort("[2001:db8:1:3::1]:5"), 400); v != Answered {
		t.Fatalf("400 bytes from another /64: got %v, want answered", v)
	}
	clock.Advance(100 * time.Millisecond)
	if v := a.admit(b, 400); v != Answered {
		t.Fatalf("400 bytes 100ms later: got %v, want answered", v)
	}
	// An answer larger than the byte burst goes to a source that had
	// nothing for a while, and is paid for before the next.
	big := netip.MustParseAddrPort("198.51.100.7:1")
	if v := a.admit(big, 5000); v != Answered {
		t.Fatalf("5000 bytes to an idle source: got %v, want answered", v)
	}
	clock.Advance(2 * time.Second)
	if v := a.admit(big, 1); v != DroppedSourceLimit {
		t.Fatalf("a byte 2s after 5000: got %v, want %v", v, DroppedSourceLimit)
	}
	clock.Advance(time.Second)
	if v := a.admit(big, 1000); v != Answered {
		t.Fatalf("1000 bytes 3s after 5000: got %v, want answered", v)
	}
}

// TestAnswerLimitsTotal: past the total budget nobody is answered, each
// within its own limits, until it refills; a refused answer costs its
// source nothing.
func TestAnswerLimitsTotal(t *testing.T) {
	a, clock := newTestLimits(t, Limits{TotalByteRate: 10000, TotalByteBurst: 20000})
	for i := range 20 {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 1}), 27005)
		want := Answered
		if i >= 10 {
			want = DroppedTotalLimit
		}
		if v := a.admit(src, 2000); v != want {
			t.Fatalf("source %d: got %v, want %v", i, v, want)
		}
	}
	clock.Advance(200 * time.Millisecond)
	if v := a.admit(netip.MustParseAddrPort("10.0.15.1:27005"), 2000); v != Answered {
		t.Fatalf("after 200ms: got %v, want answered", v)
	}
}

// TestAnswerLimitsBoundedTable: the table holds at most its slots; a new
// source whose slots are all held by busy sources is refused, and gets a
// slot once they are idle, without anyone's limit being reset.
func TestAnswerLimitsBoundedTable(t *testing.T) {
	a, clock := newTestLimits(t, Limits{MaxSources: 1, Rate: 1, Burst: 1})
	if len(a.sets) != 1 {
		t.Fatalf("%d sets for 1 source, want 1", len(a.sets))
	}
	for i := range limitWays {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), 1)
		if v := a.admit(src, 10); v != Answered {
			t.Fatalf("source %d: got %v", i, v)
		}
	}
	newcomer := netip.MustParseAddrPort("10.0.1.1:1")
	if v := a.admit(newcomer, 10); v != DroppedSourceLimit {
		t.Fatalf("newcomer in a full table: got %v, want %v", v, DroppedSourceLimit)
	}
	if v := a.admit(netip.MustParseAddrPort("10.0.0.0:1"), 10); v != DroppedSourceLimit {
		t.Fatalf("a held source past its limit: got %v, want %v (its state kept)", v, DroppedSourceLimit)
	}
	clock.Advance(time.Second)
	if v := a.admit(newcomer, 10); v != Answered {
		t.Fatalf("newcomer once the others are idle: got %v, want answered", v)
	}
}

// TestAnswerLimitsAllocateNothing: admitting an answer, for a known or a
// new source, allocates nothing.
func TestAnswerLimitsAllocateNothing(t *testing.T) {
	a, _ := newTestLimits(t, Limits{})
	ds := [][]byte{make([]byte, 1200), make([]byte, 300)}
	s := &Shield{limits: a}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		s.Admit(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), 27005), ds)
		s.Admit(netip.MustParseAddrPort("[2001:db8::1]:27005"), ds)
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per answer, want 0", allocs)
	}
}
