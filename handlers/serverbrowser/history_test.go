package serverbrowser

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

func TestHistoryBucketRollover(t *testing.T) {
	const bucket = 15 * time.Minute
	clock := testutil.NewClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	h := NewHistory(bucket, 4, 10)
	samples := func() []int {
		got, _, _, ok := h.Samples(clock.Now(), "s", nil)
		if !ok {
			t.Fatal("the server is not tracked")
		}
		return got
	}
	h.Record(clock.Now(), "s", "S", 3, 8)
	h.Record(clock.Now().Add(time.Minute), "s", "S", 5, 8) // same bucket: its peak
	h.Record(clock.Now().Add(2*time.Minute), "s", "S", 1, 8)
	if got, want := samples(), []int{-1, -1, -1, 5}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	clock.Advance(bucket)
	h.Record(clock.Now(), "s", "S", 2, 8)
	clock.Advance(2 * bucket) // one bucket without a sample
	h.Record(clock.Now(), "s", "S", 7, 8)
	if got, want := samples(), []int{5, 2, -1, 7}; !slices.Equal(got, want) {
		t.Fatalf("after rollover: got %v, want %v", got, want)
	}
	clock.Advance(bucket) // the window moves on without a sample
	if got, want := samples(), []int{2, -1, 7, -1}; !slices.Equal(got, want) {
		t.Fatalf("a bucket later: got %v, want %v", got, want)
	}
	clock.Advance(100 * bucket) // a gap longer than the window clears it all
	h.Record(clock.Now(), "s", "S", 4, 8)
	if got, want := samples(), []int{-1, -1, -1, 4}; !slices.Equal(got, want) {
		t.Fatalf("after a long gap: got %v, want %v", got, want)
	}
	h.Record(clock.Now().Add(-10*bucket), "s", "S", 9, 8) // older than the window
	if got, want := samples(), []int{-1, -1, -1, 4}; !slices.Equal(got, want) {
		t.Fatalf("after a sample older than the window: got %v, want %v", got, want)
	}
}

func TestHistoryBounded(t *testing.T) {
	const bucket, samples, maxServers = time.Minute, 96, 50
	clock := testutil.NewClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	h := NewHistory(bucket, samples, maxServers)
	long := string(make([]byte, 10000))
	tracked := 0
	for i := range 10 * maxServers {
		if h.Record(clock.Now(), fmt.Sprint("server", i), long, 1<<30, 1<<30) {
			tracked++
		}
		clock.Advance(time.Second)
	}
	if tracked != maxServers || h.Len() != maxServers {
		t.Fatalf("tracked %d (Len %d), want %d", tracked, h.Len(), maxServers)
	}
	// Each ring keeps its size, however many samples it gets.
	for range 10 * samples {
		h.Record(clock.Now(), "server0", long, 5, 8)
		clock.Advance(bucket)
	}
	for _, s := range h.servers {
		if len(s.ring) != samples || cap(s.ring) != samples || len(s.name) > maxName {
			t.Fatalf("a series holds %d samples (cap %d) and a name of %d bytes", len(s.ring), cap(s.ring), len(s.name))
		}
	}
	got, _, _, _ := h.Samples(clock.Now(), "server0", nil)
	if got[len(got)-2] != 5 {
		t.Fatalf("samples %v", got)
	}
	// Servers silent for the whole window make room for new ones.
	if !h.Record(clock.Now(), "newcomer", "N", 1, 8) {
		t.Fatal("a new server was refused though the others were silent for the whole window")
	}
	if h.Len() != 2 {
		t.Fatalf("Len %d after the silent servers were forgotten, want 2", h.Len())
	}
	if _, _, _, ok := h.Samples(clock.Now(), "server1", nil); ok {
		t.Fatal("a forgotten server still has samples")
	}
}
