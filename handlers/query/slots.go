package query

import (
	"net/netip"
	"sync"
)

// slots bounds the ad-hoc upstream work (a name lookup, a query's socket)
// running at once: in all, and per client network, so that a few networks
// pointing queries at targets that never answer cannot hold every slot for
// the query timeout. Only upstream work takes one: answers from the cache
// never do. The map holds only networks that hold a slot, so it is bounded
// by the total.
type slots struct {
	total, perNetwork int

	mu   sync.Mutex
	used int
	held map[netip.Prefix]int
}

func newSlots(total, perNetwork int) *slots {
	return &slots{total: total, perNetwork: perNetwork, held: make(map[netip.Prefix]int)}
}

// take takes a slot for network, or reports which bound refused it:
// perNetwork true when network's own.
func (s *slots) take(network netip.Prefix) (ok, perNetwork bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.held[network] >= s.perNetwork:
		return false, true
	case s.used >= s.total:
		return false, false
	}
	s.used++
	s.held[network]++
	return true, false
}

// give returns a slot network took.
func (s *slots) give(network netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	if n := s.held[network] - 1; n > 0 {
		s.held[network] = n
	} else {
		delete(s.held, network)
	}
}
