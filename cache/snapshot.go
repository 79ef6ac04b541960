package cache

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
)

// Snapshot is an immutable, pre-serialised response: its body, content type
// and ETag, and its length formatted once, so serving it costs no
// formatting per request (see HeaderValues).
type Snapshot struct {
	Body          []byte
	ContentType   string
	ETag          string // with quotes, and the W/ prefix when weak
	ContentLength string
}

// NewSnapshot builds a snapshot of body, tagged with an ETag derived from
// its content only (so an unchanged body keeps its ETag across reloads and
// restarts).
func NewSnapshot(body []byte, contentType string, weak bool) *Snapshot {
	etag := ETag(body, weak)
	return &Snapshot{
		Body:          body,
		ContentType:   contentType,
		ETag:          etag,
		ContentLength: strconv.Itoa(len(body)),
	}
}

// Snapshots maps keys to their current snapshot. Reads are lock-free (one
// atomic load); writes copy the map, which suits a handful of keys that
// change rarely, such as fleets.
type Snapshots[K comparable] struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[K]*Snapshot]
}

// Get returns the snapshot for k, or nil.
func (s *Snapshots[K]) Get(k K) *Snapshot {
	m := s.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[k]
}

// Len is the number of keys.
func (s *Snapshots[K]) Len() int {
	m := s.m.Load()
	if m == nil {
		return 0
	}
	return len(*m)
}

// Replace swaps in a whole new set of snapshots at once, reusing the
// current snapshot of a key whose ETag is unchanged (so its identity, and
// anything hung on it, survives). It returns the keys whose snapshot
// changed, was added or was removed.
func (s *Snapshots[K]) Replace(next map[K]*Snapshot) (changed []K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur map[K]*Snapshot
	if p := s.m.Load(); p != nil {
		cur = *p
	}
	m := make(map[K]*Snapshot, len(next))
	for k, snap := range next {
		if old, ok := cur[k]; ok && old.ETag == snap.ETag && old.ContentType == snap.ContentType {
			m[k] = old
			continue
		}
		m[k] = snap
		changed = append(changed, k)
	}
	for k := range cur {
		if _, ok := next[k]; !ok {
			changed = append(changed, k)
		}
	}
	s.m.Store(&m)
	return changed
}

// All returns a copy of the current map.
func (s *Snapshots[K]) All() map[K]*Snapshot {
	m := s.m.Load()
	if m == nil {
		return map[K]*Snapshot{}
	}
	return maps.Clone(*m)
}
