package gqp

import (
	"net/netip"
	"time"
)

// The networks of the failure table: an IPv4 /24 and an IPv6 /48, the
// most one site or customer usually holds, are one network each.
const (
	networkIPv4Bits = 24
	networkIPv6Bits = 48
)

// FailingPerNetwork is the most failing sources one network (an IPv4 /24,
// an IPv6 /48) may have in the failure table at once; fewer when
// ServerConfig.MaxAuthorized is below twice as many, so that one network
// never holds more than half the table.
const FailingPerNetwork = 16

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
	networkFull         // the source's network has its share of the table
)

// failureTable counts the failed challenges of each source (an IPv4
// address or an IPv6 prefix) for as long as they are remembered, in at
// most max entries. One network holds at most perNetwork of them: a source
// new to the table whose network already holds that many is refused
// challenges, as is every new source while the table is full, until
// failures expire. Refusing is safer than allowing guesses the table
// cannot count; the share keeps the refusal to the network that fails,
// however many addresses it holds, unless at least max/perNetwork networks
// fail together. Trusted sources are never refused for want of room.
//
// A failureTable is not safe for concurrent use (Server.mu guards it).
type failureTable struct {
	max, perNetwork int
	maxFailures     int
	lockout         time.Duration

	sources  map[netip.Prefix]failures
	networks map[netip.Prefix]int // failing sources of each network holding any
}

func newFailureTable(cfg *ServerConfig) failureTable {
	return failureTable{
		max:         cfg.MaxAuthorized,
		perNetwork:  min(FailingPerNetwork, max(1, cfg.MaxAuthorized/2)),
		maxFailures: cfg.MaxChallengeFailures,
		lockout:     cfg.ChallengeLockout,
		sources:     make(map[netip.Prefix]failures),
		networks:    make(map[netip.Prefix]int),
	}
}

// networkOf is the network of source, a prefix made by clientaddr.Key.
func networkOf(source netip.Prefix) netip.Prefix {
	bits := networkIPv4Bits
	if source.Addr().Is6() {
		bits = networkIPv6Bits
	}
	p, _ := source.Addr().Prefix(min(bits, source.Bits()))
	return p
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
	case t.networks[networkOf(source)] >= t.perNetwork:
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
		network := networkOf(source)
		if !trusted && t.networks[network] >= t.perNetwork {
			return
		}
		t.networks[network]++
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
		network := networkOf(source)
		if t.networks[network]--; t.networks[network] <= 0 {
			delete(t.networks, network)
		}
	}
}
