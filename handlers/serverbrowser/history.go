package serverbrowser

import (
	"sync"
	"time"
)

// History keeps each server's player count over a window of fixed
// buckets (by default 96 buckets of 15 minutes: the last day), the peak
// of each bucket, in a ring per server: a server costs the same memory
// however long it is tracked, and at most MaxServers are tracked.
type History struct {
	bucket     int64 // nanoseconds
	samples    int
	maxServers int

	mu      sync.Mutex
	servers map[string]*series
}

// series is one server's ring. ring[b%len(ring)] holds bucket b's peak,
// or -1 when nothing was sampled in it, for the buckets last-len(ring)+1
// through last.
type series struct {
	last int64
	ring []int16
	name string // the last name seen, for a server no longer listed
	max  int16
}

// maxName bounds the name kept per server, in bytes.
const maxName = 128

// NewHistory returns a History of samples buckets of bucket each, for at
// most maxServers servers. The arguments must be positive.
func NewHistory(bucket time.Duration, samples, maxServers int) *History {
	return &History{bucket: int64(bucket), samples: samples, maxServers: maxServers, servers: make(map[string]*series)}
}

func (h *History) index(now time.Time) int64 { return now.UnixNano() / h.bucket }

func clamp16(n int) int16 { return int16(min(max(n, 0), 1<<15-1)) }

// Record notes that server had players (of maxPlayers) at now. A server not
// tracked yet is tracked if there is room once servers silent for the
// whole window are forgotten; Record reports whether it is tracked.
func (h *History) Record(now time.Time, server, name string, players, maxPlayers int) bool {
	b := h.index(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[server]
	if s == nil {
		if len(h.servers) >= h.maxServers {
			h.pruneLocked(b)
			if len(h.servers) >= h.maxServers {
				return false
			}
		}
		s = &series{last: b, ring: make([]int16, h.samples)}
		for i := range s.ring {
			s.ring[i] = -1
		}
		h.servers[server] = s
	}
	n := int64(len(s.ring))
	switch {
	case b > s.last:
		// Clear the buckets skipped since the last sample: at most the
		// whole ring, however long the gap.
		for i := s.last + 1; i <= b && i <= s.last+n; i++ {
			s.ring[i%n] = -1
		}
		s.last = b
	case b <= s.last-n:
		return true // older than the window (a clock stepped back)
	}
	if p := clamp16(players); p > s.ring[b%n] {
		s.ring[b%n] = p
	}
	if len(name) > maxName {
		name = name[:maxName]
	}
	s.name, s.max = name, clamp16(maxPlayers)
	return true
}

// pruneLocked forgets the servers with no sample in the window ending at
// bucket b.
func (h *History) pruneLocked(b int64) {
	for k, s := range h.servers {
		if s.last <= b-int64(h.samples) {
			delete(h.servers, k)
		}
	}
}

// Prune forgets the servers with no sample in the window ending at now.
func (h *History) Prune(now time.Time) {
	h.mu.Lock()
	h.pruneLocked(h.index(now))
	h.mu.Unlock()
}

// Len is the number of servers tracked.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Samples appends server's window ending at now to dst, oldest bucket
// first, -1 for a bucket without a sample, and returns it with the
// server's last name and maximum of players; ok is false for a server not
// tracked.
func (h *History) Samples(now time.Time, server string, dst []int) (out []int, name string, maxPlayers int, ok bool) {
	b := h.index(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[server]
	if s == nil {
		return dst, "", 0, false
	}
	n := int64(len(s.ring))
	for i := b - n + 1; i <= b; i++ {
		v := -1
		if i <= s.last && i > s.last-n {
			v = int(s.ring[i%n])
		}
		dst = append(dst, v)
	}
	return dst, s.name, int(s.max), true
}

// Servers appends the servers tracked to dst.
func (h *History) Servers(dst []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.servers {
		dst = append(dst, k)
	}
	return dst
}
