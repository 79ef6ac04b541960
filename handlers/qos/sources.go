package qos

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/periodic"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Source identifies a client for rate limiting and bans: an IPv4 address, an
// IPv6 prefix (by default the /64 one subscriber normally holds, so a client
// cannot dodge a ban by hopping addresses inside it), or an address with its
// port when sources are keyed by address and port.
type Source netip.AddrPort

// SourceOfAddrPort returns the Source for a client address. With byPort
// false the port is dropped and IPv6 addresses are reduced to their prefix
// of ipv6Prefix bits (0: DefaultClientIPv6Prefix). It allocates nothing.
func SourceOfAddrPort(ap netip.AddrPort, byPort bool, ipv6Prefix int) Source {
	ip := ap.Addr().Unmap().WithZone("")
	if byPort {
		return Source(netip.AddrPortFrom(ip, ap.Port()))
	}
	return Source(netip.AddrPortFrom(clientaddr.Key(ip, ipv6Prefix).Addr(), 0))
}

func (s Source) String() string {
	ap := netip.AddrPort(s)
	if ap.Port() == 0 {
		return ap.Addr().String()
	}
	return ap.String()
}

// hash mixes every bit of the address and port into the low bits that pick
// a shard; seed keeps the spread unpredictable to senders.
func (s Source) hash(seed uint64) uint64 {
	ap := netip.AddrPort(s)
	a := ap.Addr().As16()
	h := mix(binary.LittleEndian.Uint64(a[:8]) ^ seed)
	h = mix(h ^ binary.LittleEndian.Uint64(a[8:]))
	return mix(h ^ uint64(ap.Port()))
}

func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 27
	h *= 0x94D049BB133111EB
	return h ^ h>>31
}

// sourceState is what the engine remembers of one source.
type sourceState struct {
	key         Source
	rate        ratelimit.State // under the engine's per-source limit
	bannedUntil int64
	prev, next  *sourceState // least-recently-seen list, newest at head.next
}

// idle reports whether forgetting s changes nothing: its bucket is full and
// it is not banned.
func (s *sourceState) idle(now int64) bool { return s.rate.Idle(now) && s.bannedUntil <= now }

type sourceShard struct {
	mu    sync.Mutex
	m     map[Source]*sourceState
	head  sourceState // sentinel of the circular list
	limit int
	_     [40]byte // keeps neighbouring shards' locks off one cache line
}

// SourceTable remembers rate-limit and ban state for a bounded number of
// sources. It is split into shards (up to 32) by a hash of the source, each
// holding its share of the bound; when a shard is full, its source seen
// least recently is forgotten. So a flood from many addresses costs at most
// the configured number of entries.
// A table outlives configuration reloads: a new engine adopts it, and bans
// stay in force.
type SourceTable struct {
	shards []sourceShard
	mask   uint64
	seed   uint64
	count  atomic.Int64
	limit  int
	clock  ratelimit.Clock
	stop   chan struct{}
	once   sync.Once
}

const maxShards = 32

// NewSourceTable returns a table holding at most limit sources (limit ≥ 1).
// clock gives the current time (time.Now when nil). If sweep is positive, a
// goroutine forgets idle sources every sweep until Destruct is called.
func NewSourceTable(limit int, clock func() time.Time, sweep time.Duration) *SourceTable {
	if limit < 1 {
		limit = 1
	}
	n := 1
	for n < maxShards && n*2 <= limit {
		n *= 2
	}
	t := &SourceTable{
		shards: make([]sourceShard, n),
		mask:   uint64(n - 1),
		seed:   rand.Uint64(),
		limit:  limit,
		clock:  ratelimit.NewClock(clock),
		stop:   make(chan struct{}),
	}
	for i := range t.shards {
		sh := &t.shards[i]
		sh.m = make(map[Source]*sourceState)
		sh.head.prev, sh.head.next = &sh.head, &sh.head
		// Spread the limit so that the shards' sum is exactly limit.
		sh.limit = limit / n
		if i < limit%n {
			sh.limit++
		}
	}
	if sweep > 0 {
		go periodic.Run(t.stop, sweep, func() { t.Sweep() })
	}
	return t
}

// Len is the number of sources tracked now.
func (t *SourceTable) Len() int { return int(t.count.Load()) }

// Limit is the most sources the table tracks.
func (t *SourceTable) Limit() int { return t.limit }

// now is the table's monotonic time in nanoseconds.
func (t *SourceTable) now() int64 { return t.clock.Now() }

// Destruct stops the sweeper. It lets a caddy.UsagePool release the table.
func (t *SourceTable) Destruct() error {
	t.once.Do(func() { close(t.stop) })
	return nil
}

// Sweep forgets sources that are idle (bucket full, not banned), oldest
// first, and returns how many it forgot.
func (t *SourceTable) Sweep() int {
	now := t.now()
	removed := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for s := sh.head.prev; s != &sh.head; {
			prev := s.prev
			if s.idle(now) {
				sh.unlink(s)
				delete(sh.m, s.key)
				removed++
			}
			s = prev
		}
		sh.mu.Unlock()
	}
	t.count.Add(int64(-removed))
	return removed
}

func (sh *sourceShard) unlink(s *sourceState) {
	s.prev.next = s.next
	s.next.prev = s.prev
	s.prev, s.next = nil, nil
}

func (sh *sourceShard) pushFront(s *sourceState) {
	s.prev = &sh.head
	s.next = sh.head.next
	sh.head.next.prev = s
	sh.head.next = s
}

// lookup returns the state of src, creating it (and evicting the least
// recently seen source if the shard is full), and marks it most recently
// seen. The caller holds sh.mu.
func (t *SourceTable) lookup(sh *sourceShard, src Source) *sourceState {
	if s, ok := sh.m[src]; ok {
		if sh.head.next != s {
			sh.unlink(s)
			sh.pushFront(s)
		}
		return s
	}
	var s *sourceState
	if len(sh.m) >= sh.limit {
		// Reuse the oldest entry: no allocation once the table is full.
		s = sh.head.prev
		sh.unlink(s)
		delete(sh.m, s.key)
	} else {
		s = new(sourceState)
		t.count.Add(1)
	}
	*s = sourceState{key: src}
	sh.m[src] = s
	sh.pushFront(s)
	return s
}

func (t *SourceTable) shard(src Source) *sourceShard { return &t.shards[src.hash(t.seed)&t.mask] }

// Banned reports whether src is banned now.
func (t *SourceTable) Banned(src Source) bool {
	sh := t.shard(src)
	now := t.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s, ok := sh.m[src]
	return ok && s.bannedUntil > now
}
