package a2s

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Default answer limits. A source is an IPv4 address or an IPv6 /64,
// whatever its port. Valve's notice for Source servers gives 25 to 75
// queries per 200 ms per address as reasonable; a shield is stricter.
const (
	// DefaultRate is how many answers a second one source gets.
	DefaultRate = 10
	// DefaultBurst is how many answers one source gets at once.
	DefaultBurst = 20
	// DefaultByteRate is how many answer bytes a second one source gets.
	DefaultByteRate = 16 << 10
	// DefaultByteBurst is how many answer bytes one source gets at once: a
	// server's info, players and some 500 rules. A larger answer
	// is sent only when the source has had nothing for a while, and is
	// then paid for before the next (ratelimit.Limit.TakeN).
	DefaultByteBurst = 64 << 10
	// DefaultTotalByteRate is how many answer bytes a second the shield
	// sends to all sources together.
	DefaultTotalByteRate = 2 << 20
	// DefaultMaxSources is how many sources' limits are held at once.
	DefaultMaxSources = 8192
)

// Limits bounds the answers a shield sends: per source, answers and bytes
// a second (token buckets of a bounded table keyed by source), and bytes a
// second for all sources together. A zero field takes its default; the
// limits cannot be turned off.
type Limits struct {
	// Answers a second one source (an IPv4 address or an IPv6 /64, any
	// port) is sent, past its challenge. Default: 10.
	Rate float64 `json:"rate,omitempty"`
	// Answers one source is sent at once. Default: 20.
	Burst int `json:"burst,omitempty"`
	// Answer bytes a second one source is sent. Default: 16384 (16KiB).
	ByteRate int `json:"byte_rate,omitempty"`
	// Answer bytes one source is sent at once. An answer larger than this
	// is sent only to a source that has had nothing for a while, and the
	// source then waits until the excess is paid at byte_rate. Default:
	// 65536 (64KiB).
	ByteBurst int `json:"byte_burst,omitempty"`
	// Answer bytes a second sent to all sources together. Default:
	// 2097152 (2MiB).
	TotalByteRate int `json:"total_byte_rate,omitempty"`
	// Answer bytes sent to all sources together at once. Default: one
	// second of total_byte_rate.
	TotalByteBurst int `json:"total_byte_burst,omitempty"`
	// Most sources whose limits are held at once; while the slots a new
	// source may take are all held by sources within their limits' time,
	// it is not answered. Default: 8192.
	MaxSources int `json:"max_sources,omitempty"`
}

func (l *Limits) setDefaults() {
	if l.Rate <= 0 {
		l.Rate = DefaultRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultBurst
	}
	if l.ByteRate <= 0 {
		l.ByteRate = DefaultByteRate
	}
	if l.ByteBurst <= 0 {
		l.ByteBurst = DefaultByteBurst
	}
	if l.TotalByteRate <= 0 {
		l.TotalByteRate = DefaultTotalByteRate
	}
	if l.TotalByteBurst <= 0 {
		l.TotalByteBurst = ratelimit.DefaultBurst(float64(l.TotalByteRate))
	}
	if l.MaxSources <= 0 {
		l.MaxSources = DefaultMaxSources
	}
}

// answerLimits applies Limits. Sources live in sets of limitWays slots,
// picked by a keyed hash of the source, each set under its own lock: a
// fixed array allocated once, so a datagram allocates nothing, and
// memory is bounded whatever the sources. A source takes a slot in its set
// that is idle (both its buckets full: forgetting it changes nothing);
// when none is, the source is refused until one is. So many busy sources
// keep newcomers of their sets out for a while, but nobody's limit is ever
// reset or diluted, and the total budget still bounds everyone.
type answerLimits struct {
	rate, bytes, total ratelimit.Limit
	clock              ratelimit.Clock
	seed               uint64
	sets               []limitSet
	mask               uint64
	totalState         ratelimit.AtomicState
}

const limitWays = 8

type limitSet struct {
	mu    sync.Mutex
	used  uint8 // a bit per slot
	keys  [limitWays][16]byte
	rate  [limitWays]ratelimit.State
	bytes [limitWays]ratelimit.State
}

func newAnswerLimits(l Limits, now func() time.Time) (*answerLimits, error) {
	l.setDefaults()
	rate, err := ratelimit.NewLimit(l.Rate, l.Burst)
	if err != nil {
		return nil, err
	}
	bytes, err := ratelimit.NewLimit(float64(l.ByteRate), l.ByteBurst)
	if err != nil {
		return nil, err
	}
	total, err := ratelimit.NewLimit(float64(l.TotalByteRate), l.TotalByteBurst)
	if err != nil {
		return nil, err
	}
	n := 1
	for n*limitWays < l.MaxSources {
		n *= 2
	}
	return &answerLimits{rate: rate, bytes: bytes, total: total, clock: ratelimit.NewClock(now),
		seed: rand.Uint64(), sets: make([]limitSet, n), mask: uint64(n - 1)}, nil
}

// sourceKey is a source's address as the limits key it: IPv4, or the IPv6
// /64, as 16 bytes.
func sourceKey(src netip.AddrPort) [16]byte {
	return clientaddr.Key(src.Addr().Unmap(), clientaddr.DefaultIPv6Prefix).Addr().As16()
}

func (a *answerLimits) set(key *[16]byte) *limitSet {
	h := mix(binary.LittleEndian.Uint64(key[:8]) ^ a.seed)
	h = mix(h ^ binary.LittleEndian.Uint64(key[8:]))
	return &a.sets[h&a.mask]
}

func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 27
	h *= 0x94D049BB133111EB
	return h ^ h>>31
}

// admit decides whether src gets an answer of n bytes now, and records it
// if so: Answered, DroppedSourceLimit (its answers or bytes, or no room
// for it) or DroppedTotalLimit.
func (a *answerLimits) admit(src netip.AddrPort, n int) Verdict {
	key := sourceKey(src)
	s := a.set(&key)
	now := a.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	slot := -1
	for i := range limitWays {
		if s.used&(1<<i) == 0 {
			if slot < 0 {
				slot = i
			}
			continue
		}
		if s.keys[i] == key {
			slot = i
			break
		}
		if slot < 0 && s.rate[i].Idle(now) && s.bytes[i].Idle(now) {
			slot = i // forgotten if key is not found further on
		}
	}
	if slot < 0 {
		return DroppedSourceLimit
	}
	var rate, bytes ratelimit.State
	if s.used&(1<<slot) != 0 && s.keys[slot] == key {
		rate, bytes = s.rate[slot], s.bytes[slot]
	}
	rate, ok := a.rate.TakeN(rate, now, 1)
	if !ok {
		return DroppedSourceLimit
	}
	bytes, ok = a.bytes.TakeN(bytes, now, int64(n))
	if !ok {
		return DroppedSourceLimit
	}
	if !a.total.AllowNAtomic(&a.totalState, now, int64(n)) {
		return DroppedTotalLimit
	}
	s.used |= 1 << slot
	s.keys[slot], s.rate[slot], s.bytes[slot] = key, rate, bytes
	return Answered
}
