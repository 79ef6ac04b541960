package dgram

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// Close ends the running job's wait, never starts a queued job, hands each
// queued job to dropped, and returns.
func TestWorkersCloseCancelsAndDrops(t *testing.T) {
	var (
		w       Workers[int]
		mu      sync.Mutex
		started []int
		dropped []int
	)
	running := make(chan int, 5) // never blocks a job, started or not
	w.Start(1, 4, func(ctx context.Context, j int) {
		mu.Lock()
		started = append(started, j)
		mu.Unlock()
		running <- j
		<-ctx.Done() // an upstream that never answers
	}, func(j int) {
		dropped = append(dropped, j) // by the one worker or by close after it returned
	})
	if !w.Offer(1) {
		t.Fatal("the first job was refused")
	}
	if j := <-running; j != 1 {
		t.Fatalf("running job %d, want 1", j)
	}
	for j := 2; j <= 5; j++ {
		if !w.Offer(j) {
			t.Fatalf("job %d refused with room in the queue", j)
		}
	}
	if w.Offer(6) {
		t.Fatal("a job was queued beyond the queue's bound")
	}
	w.Close()
	if !slices.Equal(started, []int{1}) {
		t.Errorf("started %v, want [1]: no job starts once the pool closes", started)
	}
	if !slices.Equal(dropped, []int{2, 3, 4, 5}) {
		t.Errorf("dropped %v, want [2 3 4 5]", dropped)
	}
}
