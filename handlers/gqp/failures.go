package gqp

import (
	"net/netip"
	"time"
)

// The two levels of share in the failure table. A network, an IPv4 /24 or
// an IPv6 /48, is the most one site or customer usually holds. An
// allocation, an IPv4 /16 or an IPv6 /32, is what one provider usually
// holds: a regional registry's smallest IPv6 allocation to an ISP or
// hosting provider is a /32 (65,536 /48s), so a share per /48 alone lets
// one provider fill the table.
const (
	networkIPv4Bits    = 24
	networkIPv6Bits    = 48
	allocationIPv4Bits = 16
	allocationIPv6Bits = 32
)

// FailingPerNetwork is the most failing sources one network (an IPv4 /24,
// an IPv6 /48) may have in the failure table at once; fewer when
// ServerConfig.MaxAuthorized is below 32, so that one network holds at
// most half the table (its one entry when MaxAuthorized is 1).
const FailingPerNetwork = 16

// AllocationShares is how many allocations (IPv4 /16s, IPv6 /32s) it
// takes to fill the failure table: one allocation may have at most
// ServerConfig.MaxAuthorized/AllocationShares failing sources in it at
// once (625 of the default 10000), and never fewer than one network may
// have. Sixteen /32s are more than a /29, the most a regional registry
// allocates an LIR without further justification.
const AllocationShares = 16

// failures is what the failure table knows of one source.
type failures struct {
	count   int
	expires time.Time // when the count is forgotten
}

// refusal is why a source may not challenge now.
type refusal uint8

const (
	admitted    refusal = iota
	lockedOut           // the source failed too often
	tableFull           // the table is full of live failures: the source could not be counted
	networkFull         // the source's network or allocation has its share of the table
)

// failureTable counts the failed challenges of each source (an IPv4
// address or an IPv6 prefix) for as long as they are remembered, in at
// most max entries. One network holds at most perNetwork of them, and one
// allocation at most perAllocation: a source new to the table whose
// network or allocation already holds that many is refused challenges, as
// is every new source while the table is full, until failures expire.
// Refusing is safer than allowing guesses the table cannot count; the
// shares keep the refusal to the network or allocation that fails,
// however many addresses it holds, unless failing sources in at least
// max/perAllocation allocations fill the table together. Trusted sources
// are never refused for want of room.
//
// A failureTable is not safe for concurrent use (Server.mu guards it).
type failureTable struct {
	max, perNetwork, perAllocation int
	maxFailures                    int
	lockout                        time.Duration

	// Each source held counts once in its network and once in its
	// allocation, so neither map has more keys than sources has.
	sources     map[netip.Prefix]failures
	networks    map[netip.Prefix]int // failing sources of each network holding any
	allocations map[netip.Prefix]int // failing sources of each allocation holding any
}

func newFailureTable(cfg *ServerConfig) failureTable {
	perNetwork := min(FailingPerNetwork, max(1, cfg.MaxAuthorized/2))
	return failureTable{
		max:           cfg.MaxAuthorized,
		perNetwork:    perNetwork,
		perAllocation: max(perNetwork, cfg.MaxAuthorized/AllocationShares),
		maxFailures:   cfg.MaxChallengeFailures,
		lockout:       cfg.ChallengeLockout,
		sources:       make(map[netip.Prefix]failures),
		networks:      make(map[netip.Prefix]int),
		allocations:   make(map[netip.Prefix]int),
	}
}

// networkOf is the network of source, a prefix made by clientaddr.Key.
func networkOf(source netip.Prefix) netip.Prefix {
	return widen(source, networkIPv4Bits, networkIPv6Bits)
}

// allocationOf is the allocation of source, a prefix made by
// clientaddr.Key.
func allocationOf(source netip.Prefix) netip.Prefix {
	return widen(source, allocationIPv4Bits, allocationIPv6Bits)
}

// widen is the prefix of v4Bits or v6Bits holding source, or source
// itself when it is wider.
func widen(source netip.Prefix, v4Bits, v6Bits int) netip.Prefix {
	bits := v4Bits
	if source.Addr().Is6() {
		bits = v6Bits
	}
	p, _ := source.Addr().Prefix(min(bits, source.Bits()))
	return p
}

// shareFull says whether source, new to the table, would take its
// network or allocation past its share.
func (t *failureTable) shareFull(source netip.Prefix) bool {
	return t.networks[networkOf(source)] >= t.perNetwork ||
		t.allocations[allocationOf(source)] >= t.perAllocation
}

// check says whether source may challenge now.
func (t *failureTable) check(source netip.Prefix, trusted bool, now time.Time) refusal {
	f, known := t.sources[source]
	switch {
	case known:
		if f.count >= t.maxFailures && now.Before(f.expires) {
			return lockedOut
		}
	case trusted:
	case len(t.sources) >= t.max:
		return tableFull
	case t.shareFull(source):
		return networkFull
	}
	return admitted
}

// fail counts a failed challenge of source. A new source is not counted
// when check would have refused it (another source took the room
// meanwhile), nor, trusted or not, when the table is full.
func (t *failureTable) fail(source netip.Prefix, trusted bool, now time.Time) {
	f, known := t.sources[source]
	if !known {
		if len(t.sources) >= t.max {
			t.prune(now)
			if len(t.sources) >= t.max {
				return
			}
		}
		if !trusted && t.shareFull(source) {
			return
		}
		t.networks[networkOf(source)]++
		t.allocations[allocationOf(source)]++
	}
	if !now.Before(f.expires) {
		f.count = 0
	}
	f.count++
	f.expires = now.Add(t.lockout)
	t.sources[source] = f
}

// prune forgets the failures that expired.
func (t *failureTable) prune(now time.Time) {
	for source, f := range t.sources {
		if now.Before(f.expires) {
			continue
		}
		delete(t.sources, source)
		uncount(t.networks, networkOf(source))
		uncount(t.allocations, allocationOf(source))
	}
}

// uncount takes one source off the count of p in counts, forgetting p at
// zero.
func uncount(counts map[netip.Prefix]int, p netip.Prefix) {
	if counts[p]--; counts[p] <= 0 {
		delete(counts, p)
	}
}
