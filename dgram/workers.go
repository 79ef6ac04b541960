package dgram

import (
	"context"
	"sync"
)

// Workers runs the blocking part of a protocol (waiting for an upstream)
// off the server's readers, which must not block: a fixed number of
// goroutines take jobs from a bounded queue until Close. Readers never
// wait on it: a job that finds the queue full is the caller's to drop and
// count. However many sources send, the goroutines and the queued jobs
// stay within the bounds given to Start.
//
// A configuration reload (and a stop) cleans up the previous protocols
// while the new ones serve, so Close must not wait for an upstream: each
// job runs with a context that Close cancels before it waits, and a job
// still queued then is dropped, never started.
type Workers[J any] struct {
	jobs    chan J
	ctx     context.Context
	cancel  context.CancelFunc
	dropped func(J)
	wg      sync.WaitGroup
}

// Start starts n goroutines running do on each job, with room for queue
// jobs waiting. do's context ends when Close is called; do must then
// return promptly. dropped (nil: none) is called, possibly from several
// goroutines at once, for each job that is taken from the queue but not
// started because the pool is closing.
func (w *Workers[J]) Start(n, queue int, do func(context.Context, J), dropped func(J)) {
	w.jobs = make(chan J, queue)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.dropped = dropped
	w.wg.Add(n)
	for range n {
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.ctx.Done():
					return
				case j := <-w.jobs:
					// Both may have been ready: a closing pool starts no job.
					if w.ctx.Err() != nil {
						w.drop(j)
						return
					}
					do(w.ctx, j)
				}
			}
		}()
	}
}

// Offer queues j, or reports false at once when the queue is full.
func (w *Workers[J]) Offer(j J) bool {
	select {
	case w.jobs <- j:
		return true
	default:
		return false
	}
}

// Close cancels the running jobs' context, waits for the goroutines, and
// drops the jobs still queued. A pool never started closes at once.
func (w *Workers[J]) Close() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.wg.Wait()
	for {
		select {
		case j := <-w.jobs:
			w.drop(j)
		default:
			return
		}
	}
}

func (w *Workers[J]) drop(j J) {
	if w.dropped != nil {
		w.dropped(j)
	}
}
