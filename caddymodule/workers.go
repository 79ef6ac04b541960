package caddymodule

import "sync"

// workers runs the blocking part of a datagram protocol (waiting for an
// upstream) off the socket's readers: a fixed number of goroutines take
// jobs from a bounded queue until Cleanup. Readers never wait on it: a job
// that finds the queue full is the caller's to drop and count.
type workers[J any] struct {
	jobs chan J
	stop chan struct{}
	wg   sync.WaitGroup
}

// start starts n goroutines running do on each job, with room for queue
// jobs waiting.
func (w *workers[J]) start(n, queue int, do func(J)) {
	w.jobs = make(chan J, queue)
	w.stop = make(chan struct{})
	w.wg.Add(n)
	for range n {
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.stop:
					return
				case j := <-w.jobs:
					do(j)
				}
			}
		}()
	}
}

// offer queues j, or reports false at once when the queue is full.
func (w *workers[J]) offer(j J) bool {
	select {
	case w.jobs <- j:
		return true
	default:
		return false
	}
}

// close stops the goroutines once their current jobs are done, and waits
// for them. Jobs still queued are dropped.
func (w *workers[J]) close() {
	if w.stop != nil {
		close(w.stop)
		w.wg.Wait()
	}
}
