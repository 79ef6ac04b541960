package ratelimit

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

func mustLimit(t testing.TB, rate float64, burst int) Limit {
	t.Helper()
	l, err := NewLimit(rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		burst int
		err   string // a substring of the error; "" for none
	}{
		{"off", 0, 0, ""},
		{"off ignores burst", 0, -3, ""},
		{"one per second", 1, 1, ""},
		{"fraction", 0.5, 3, ""},
		{"fast", 1e9, 1 << 30, ""},
		{"faster than a nanosecond", 1e12, 1, ""},
		{"negative", -1, 1, "rate -1 per second"},
		{"NaN", math.NaN(), 1, "rate NaN per second"},
		{"infinite", math.Inf(1), 1, "rate +Inf per second"},
		{"no burst", 10, 0, "burst 0: must be at least 1 when rate is set"},
		{"negative burst", 10, -2, "burst -2"},
		{"too slow", 1e-10, 1, "rate 1e-10 per second: must be at least one per 90 years"},
		{"burst too long", 1e-9, 4, "burst 4 at rate 1e-09 per second"},
		{"huge burst", 1, math.MaxInt, "burst 9223372036854775807 at rate 1 per second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.rate, tt.burst)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("got %v, want an error containing %q", err, tt.err)
			}
			named := ValidateNamed("packet_rate", "packet_burst", tt.rate, tt.burst)
			if (named == nil) != (err == nil) || err != nil &&
				named.Error() != strings.NewReplacer("burst", "packet_burst", "rate", "packet_rate").Replace(err.Error()) {
				t.Fatalf("ValidateNamed: got %v, Validate: %v", named, err)
			}
			_, nerr := NewLimit(tt.rate, tt.burst)
			if (nerr == nil) != (err == nil) {
				t.Fatalf("NewLimit: got %v, Validate: %v", nerr, err)
			}
		})
	}
}

func TestRoundsIntervalUp(t *testing.T) {
	tests := []struct {
		rate float64
		want time.Duration
	}{
		{1, time.Second},
		{3, 333333334},
		{1e9, 1},
		{3e9, 1},
		{0.5, 2 * time.Second},
	}
	for _, tt := range tests {
		l := mustLimit(t, tt.rate, 2)
		if got := l.Interval(); got != tt.want {
			t.Errorf("rate %v: got interval %v, want %v", tt.rate, got, tt.want)
		}
		if got, want := l.Window(), 2*tt.want; got != want {
			t.Errorf("rate %v: got window %v, want %v", tt.rate, got, want)
		}
	}
}

func TestAllowBurstThenRate(t *testing.T) {
	l := mustLimit(t, 10, 3) // one per 100ms, three at once
	var s State
	now := int64(time.Hour)
	for i := range 3 {
		if !l.Allow(&s, now) {
			t.Fatalf("event %d of the burst refused", i)
		}
	}
	if l.Allow(&s, now) {
		t.Fatal("fourth event at once admitted")
	}
	if got, want := l.Wait(s, now), 100*time.Millisecond; got != want {
		t.Fatalf("wait: got %v, want %v", got, want)
	}
	if l.Allow(&s, now+int64(99*time.Millisecond)) {
		t.Fatal("admitted before the interval passed")
	}
	if !l.Allow(&s, now+int64(100*time.Millisecond)) {
		t.Fatal("refused after the interval passed")
	}
	if got, want := l.Backlog(s, now+int64(100*time.Millisecond)), 300*time.Millisecond; got != want {
		t.Fatalf("backlog: got %v, want %v", got, want)
	}
	later := now + int64(time.Second)
	if !s.Idle(later) || l.Backlog(s, later) != 0 || l.Wait(s, later) != 0 {
		t.Fatalf("state %+v not idle a second later", s)
	}
	for i := range 3 {
		if !l.Allow(&s, later) {
			t.Fatalf("event %d of the refilled burst refused", i)
		}
	}
}

func TestZeroLimitAdmitsEverything(t *testing.T) {
	var l Limit
	if !l.Unlimited() {
		t.Fatal("zero Limit not unlimited")
	}
	var s State
	var a AtomicState
	for range 1000 {
		if !l.Allow(&s, 0) || !l.AllowAtomic(&a, 0) {
			t.Fatal("zero Limit refused an event")
		}
	}
	if l.Wait(s, 0) != 0 {
		t.Fatal("zero Limit asks to wait")
	}
}

func TestLimiterWithManualClock(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lim, err := NewLimiter(2, 2, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !lim.Allow() || !lim.Allow() {
		t.Fatal("burst refused")
	}
	if lim.Allow() {
		t.Fatal("third event at once admitted")
	}
	if got, want := lim.Wait(), 500*time.Millisecond; got != want {
		t.Fatalf("wait: got %v, want %v", got, want)
	}
	if got := RetryAfter(lim.Wait()); got != 1 {
		t.Fatalf("retry after: got %d, want 1", got)
	}
	clock.Advance(499 * time.Millisecond)
	if lim.Allow() {
		t.Fatal("admitted before the wait passed")
	}
	clock.Advance(time.Millisecond)
	if !lim.Allow() {
		t.Fatal("refused when the wait passed")
	}
	if _, err := NewLimiter(-1, 1, clock.Now); err == nil {
		t.Fatal("negative rate accepted")
	}
	off, err := NewLimiter(0, 0, clock.Now)
	if err != nil || !off.Allow() || !off.Limit().Unlimited() {
		t.Fatalf("rate 0: got %v, want an unlimited limiter", err)
	}
}

func TestAtomicStateConcurrent(t *testing.T) {
	l := mustLimit(t, 1, 100) // nothing refills within the test
	var s AtomicState
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for range 100 {
				if l.AllowAtomic(&s, 0) {
					n++
				}
			}
			mu.Lock()
			admitted += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if admitted != 100 {
		t.Fatalf("got %d events admitted, want exactly the burst of 100", admitted)
	}
}

func TestClock(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewClock(clock.Now)
	if got := c.Now(); got != 0 {
		t.Fatalf("got %d at creation, want 0", got)
	}
	clock.Advance(1500 * time.Millisecond)
	if got, want := c.Now(), int64(1500*time.Millisecond); got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
	clock.Advance(-time.Hour)
	if got := c.Now(); got != 0 {
		t.Fatalf("got %d for a time before the clock's creation, want 0", got)
	}
	var zero Clock
	a := zero.Now()
	b := NewClock(nil).Now()
	if a < 0 || b < 0 || b > int64(time.Minute) {
		t.Fatalf("zero clock %d, new clock %d: want both ≥ 0, the new one near 0", a, b)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{0, 1}, {-time.Second, 1}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + 1, 2}, {90 * time.Second, 90},
		{math.MaxInt64, math.MaxInt64/int64(time.Second) + 1},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.d); got != tt.want {
			t.Errorf("RetryAfter(%v): got %d, want %d", tt.d, got, tt.want)
		}
	}
}

func TestDefaultBurst(t *testing.T) {
	tests := []struct {
		rate float64
		want int
	}{
		{10, 10}, {2.5, 3}, {1.0001, 2}, {1, 1}, {0.2, 1}, {1e-9, 1},
		{0, 1}, {-5, 1}, {math.NaN(), 1},
		{MaxBurst - 0.5, MaxBurst}, {MaxBurst, MaxBurst}, {1e12, MaxBurst}, {math.Inf(1), MaxBurst},
	}
	for _, tt := range tests {
		got := DefaultBurst(tt.rate)
		if got != tt.want {
			t.Errorf("DefaultBurst(%v): got %d, want %d", tt.rate, got, tt.want)
		}
		// Every valid rate is valid with its default burst.
		if Validate(tt.rate, 1) == nil {
			if err := Validate(tt.rate, got); err != nil {
				t.Errorf("rate %v with its default burst %d: %v", tt.rate, got, err)
			}
		}
	}
	// The default burst is one second of events: a fresh limiter admits
	// exactly that many at once.
	l := mustLimit(t, 2.5, DefaultBurst(2.5))
	var s State
	n := 0
	for l.Allow(&s, 0) {
		n++
	}
	if n != 3 {
		t.Errorf("a fresh limiter of 2.5/s with the default burst admitted %d at once, want 3", n)
	}
}

func TestAllowDoesNotAllocate(t *testing.T) {
	l := mustLimit(t, 1000, 10)
	var s State
	var a AtomicState
	lim, _ := NewLimiter(1000, 10, nil)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 1000
		l.Allow(&s, now)
		l.AllowAtomic(&a, now)
		lim.Allow()
		_ = lim.Wait()
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per event, want 0", allocs)
	}
}

// FuzzAllow drives a limit with arbitrary rates, bursts and steps of time and
// checks the arithmetic: no overflow, never more than burst + rate×t events in
// any span t, a fresh burst admitted whole, and Wait exact.
func FuzzAllow(f *testing.F) {
	f.Add(10.0, 3, int64(0), []byte{0, 0, 0, 0, 10, 200, 1, 0, 0})
	f.Add(1e9, 1, int64(math.MaxInt64/4), []byte{1, 1, 1, 255, 0, 0})
	f.Add(3.0, 1000, int64(-5), []byte{7, 0, 7, 0, 7, 0, 255, 255})
	f.Add(1.1e-8, 2, int64(MaxSpan)-1, []byte{63, 63, 63, 127, 0})
	f.Add(1e-9, 3, int64(1), []byte{255, 255, 255})
	f.Add(7e8, 1<<20, int64(12345), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, rate float64, burst int, start int64, steps []byte) {
		if Validate(rate, burst) != nil || rate == 0 {
			return
		}
		// Keep times where a Clock's readings are: in [0, MaxSpan].
		start %= int64(MaxSpan)
		if start < 0 {
			start = -start
		}
		if len(steps) > 300 {
			steps = steps[:300]
		}
		l := mustLimit(t, rate, burst)
		if float64(l.interval)*rate < float64(time.Second)*(1-1e-15) {
			t.Fatalf("interval %d rounded below 1s/%v", l.interval, rate)
		}
		var s State
		now := start
		// A fresh state admits its whole burst at once (up to a bound, to
		// keep the fuzzer fast).
		for i := range min(burst, 1000) {
			if !l.Allow(&s, now) {
				t.Fatalf("event %d of a fresh burst of %d refused", i, burst)
			}
		}
		s = State{}
		var times []int64 // when each admitted event was
		for _, b := range steps {
			// Steps of time: 0, then growing powers of two up to about a
			// day, some in multiples of the interval.
			var d int64
			switch {
			case b == 0:
			case b < 64:
				d = int64(b%8) * (l.interval / 8)
			default:
				d = int64(1) << (b % 47)
			}
			if now+d > int64(MaxSpan) {
				break
			}
			now += d
			before := s
			wait := l.Wait(s, now)
			ok := l.Allow(&s, now)
			if ok != (wait == 0) {
				t.Fatalf("Allow %v but Wait %v", ok, wait)
			}
			if !ok {
				if s != before {
					t.Fatal("a refused event changed the state")
				}
				// Exactly at now+wait the event is admitted, a nanosecond
				// earlier it is not.
				probe := s
				if wait > 1 && l.Allow(&probe, now+int64(wait)-1) {
					t.Fatalf("admitted a nanosecond before the wait %v ended", wait)
				}
				probe = s
				if !l.Allow(&probe, now+int64(wait)) {
					t.Fatalf("refused when the wait %v ended", wait)
				}
				continue
			}
			if s.tat <= now || s.tat-now > l.tolerance {
				t.Fatalf("TAT %d out of (now, now+tolerance] for now %d, tolerance %d", s.tat, now, l.tolerance)
			}
			if b := l.Backlog(s, now); b <= 0 || b > l.Window() {
				t.Fatalf("backlog %v out of (0, %v]", b, l.Window())
			}
			times = append(times, now)
		}
		// In every span [times[i], times[j]], j-i+1 events were admitted:
		// at most burst + span/interval, so at most burst + rate × span.
		for i := range times {
			for j := i; j < len(times); j++ {
				k := int64(j - i + 1)
				span := times[j] - times[i]
				if k > int64(burst) && (k-int64(burst)) > span/l.interval {
					t.Fatalf("%d events in %dns: more than burst %d + rate %v × span", k, span, burst, rate)
				}
			}
		}
	})
}

func BenchmarkLimitAllow(b *testing.B) {
	l := mustLimit(b, 1e6, 100)
	var s State
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now += 500
		l.Allow(&s, now)
	}
}

func BenchmarkLimitAllowAtomic(b *testing.B) {
	l := mustLimit(b, 1e6, 100)
	var s AtomicState
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now += 500
		l.AllowAtomic(&s, now)
	}
}

func BenchmarkLimiterAllowParallel(b *testing.B) {
	lim, err := NewLimiter(1e6, 100, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			lim.Allow()
		}
	})
}

// TestTakeN admits n events at once within the burst, a message costing
// more than the burst only from an idle state, and never more than
// max(burst, n) + rate×t over a span t.
func TestTakeN(t *testing.T) {
	l := mustLimit(t, 1000, 4000) // 1000 bytes per second, 4000 at once
	ms := int64(time.Millisecond)
	var s State
	steps := []struct {
		now, n int64
		want   bool
	}{
		{0, 3000, true},          // within the burst
		{0, 1500, false},         // 4500 > 4000: refused, s unchanged
		{0, 1000, true},          // 4000: the whole burst
		{0, 1, false},            // nothing left
		{1000 * ms, 1000, true},  // a second refilled 1000
		{1000 * ms, 9000, false}, // larger than the burst, not idle
		{5000 * ms, 9000, true},  // larger than the burst, idle: sent, 9 s of debt
		{9000 * ms, 1, false},    // 5 s of the debt left: more than the burst
		{11000 * ms, 1000, true}, // 3 s left + 1 s: fits the 4 s burst
	}
	for i, st := range steps {
		next, ok := l.TakeN(s, st.now, st.n)
		if ok != st.want {
			t.Fatalf("step %d (%d events at %v): got %v, want %v", i, st.n, time.Duration(st.now), ok, st.want)
		}
		if !ok && next != s {
			t.Fatalf("step %d: a refusal changed the state", i)
		}
		s = next
	}
	var a AtomicState
	if !l.AllowNAtomic(&a, 0, 4000) || l.AllowNAtomic(&a, 0, 1) || !l.AllowNAtomic(&a, 2000*ms, 2000) {
		t.Fatal("AllowNAtomic does not follow TakeN")
	}
	if _, ok := (Limit{}).TakeN(State{}, 0, 1<<40); !ok {
		t.Fatal("the zero Limit refused")
	}
	// A slow limit and a huge n: no overflow, and the state stays ahead.
	slow := mustLimit(t, 1e-9, 1)
	if next, ok := slow.TakeN(State{}, int64(MaxSpan), math.MaxInt64); !ok || next.tat < int64(MaxSpan) {
		t.Fatalf("huge cost from idle: got %v %v", next, ok)
	}
}
