package master

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wire "github.com/gamegate/gamegate/wire/master"
)

// Registry holds the listed servers and the challenges waiting for an
// answer. It is safe for concurrent use and may serve several Masters in
// turn (configurations reloaded): each call takes its limits from its
// caller's Config.
type Registry struct {
	clock ratelimit.Clock
	// key makes the challenges (mint): secret, the registry's own.
	key [32]byte

	mu        sync.RWMutex
	servers   []server // dense; index maps an address to its place
	index     map[netip.AddrPort]int
	perAddr   map[netip.Addr]int
	pending   map[netip.AddrPort]challenge
	perSource map[netip.Prefix]int // challenges waiting, by source
	perNet    map[netip.Prefix]int // challenges waiting, by network (/24, /48)
	nextSweep int64

	// The sources answered in full while the reply budget was calm. Taken
	// alone or inside mu.
	knownMu    sync.Mutex
	known      map[netip.Prefix]calmSource
	knownSweep int64

	// The link to a shared store (nil: none), the registrations waiting to
	// be written there, and the most servers read from it (the last
	// Master's max_servers).
	shareMu    sync.Mutex // held by Share and Unshare
	shared     *sharing
	outbox     map[netip.AddrPort]outgoing
	maxServers atomic.Int64
	// generation counts the changes of the listed servers (Generation).
	generation atomic.Uint64
	// The last Master's shared_networks: where a server another node
	// proved may be listed besides public addresses.
	sharedNetworks atomic.Pointer[[]netip.Prefix]
}

// server is one listed server. Its buffers are reused when the slot is.
type server struct {
	addr                          netip.AddrPort
	expires                       int64
	name                          []byte
	protocol, clients, maxClients int
	gameType                      int
	info                          []byte
	// The time slot of the challenge that last listed or refreshed it: an
	// answer to that one or an older one is a replay.
	provenSlot int64
}

// challenge is a getinfo challenge waiting for its infoResponse.
type challenge struct {
	expires int64
	source  netip.Prefix // the key it is counted under in perSource
	network netip.Prefix // and in perNet
	n       uint8
	b       [maxChallengeSent]byte
}

// NewRegistry returns an empty registry reading the time from now (nil
// means time.Now). The clock lives as long as the registry.
func NewRegistry(now func() time.Time) *Registry {
	r := &Registry{
		clock:     ratelimit.NewClock(now),
		index:     make(map[netip.AddrPort]int),
		perAddr:   make(map[netip.Addr]int),
		pending:   make(map[netip.AddrPort]challenge),
		perSource: make(map[netip.Prefix]int),
		perNet:    make(map[netip.Prefix]int),
		outbox:    make(map[netip.AddrPort]outgoing),
		known:     make(map[netip.Prefix]calmSource),
	}
	r.maxServers.Store(DefaultMaxServers)
	_, _ = rand.Read(r.key[:])
	return r
}

// Challenges are made, not drawn: the first two characters carry the
// time slot the challenge was made in (challengeSlot steps, wrapping at
// challengeSlots, past MaxChallengeTimeout), the others a keyed hash of
// the address and port it is sent to and the slot. So a full-length
// challenge (maxChallengeSent: 60 bits of hash) can be checked without
// the table of waiting challenges: a heartbeat flood that makes a
// server's challenge forgotten no longer keeps its answer from listing
// it.
const (
	challengeSlot  = int64(time.Second / 64)
	challengeSlots = 64 * 64
)

// mint fills c (at least 2 bytes) with the challenge for addr made at now.
func (r *Registry) mint(c []byte, addr netip.AddrPort, now int64) {
	slot := now / challengeSlot
	c[0] = challengeAlphabet[slot>>6&63]
	c[1] = challengeAlphabet[slot&63]
	var in [len(r.key) + 16 + 2 + 8]byte
	copy(in[:], r.key[:])
	a := addr.Addr().As16()
	copy(in[len(r.key):], a[:])
	binary.BigEndian.PutUint16(in[len(r.key)+16:], addr.Port())
	binary.BigEndian.PutUint64(in[len(r.key)+18:], uint64(slot))
	sum := sha256.Sum256(in[:])
	for i := 2; i < len(c); i++ {
		c[i] = challengeAlphabet[sum[i]&63]
	}
}

// slotOf returns the time slot challenge c says it was made in: the
// latest slot up to now's with the slot bits it carries.
func slotOf(c []byte, now int64) (int64, bool) {
	if len(c) < 2 {
		return 0, false
	}
	hi, lo := strings.IndexByte(challengeAlphabet, c[0]), strings.IndexByte(challengeAlphabet, c[1])
	if hi < 0 || lo < 0 {
		return 0, false
	}
	cur := now / challengeSlot
	return cur - (cur-int64(hi<<6|lo))&(challengeSlots-1), true
}

// made reports whether c is a full-length challenge this registry made
// for addr less than timeout before now.
func (r *Registry) made(c []byte, addr netip.AddrPort, now int64, timeout time.Duration) bool {
	slot, ok := slotOf(c, now)
	if !ok || len(c) != maxChallengeSent || slot < 0 || now >= slot*challengeSlot+int64(timeout) {
		return false
	}
	var want [maxChallengeSent]byte
	r.mint(want[:], addr, slot*challengeSlot)
	return subtle.ConstantTimeCompare(want[:], c) == 1
}

// sweepEvery bounds how often expired servers and challenges are walked.
const sweepEvery = int64(time.Second)

// sweep forgets expired servers and challenges, at most once per
// sweepEvery unless forced. The caller holds mu.
func (r *Registry) sweep(now int64, force bool) {
	if !force && now < r.nextSweep {
		return
	}
	r.nextSweep = now + sweepEvery
	for a, c := range r.pending {
		if now >= c.expires {
			r.forget(a, c)
		}
	}
	for i := 0; i < len(r.servers); {
		if now >= r.servers[i].expires {
			r.remove(i)
			continue
		}
		i++
	}
}

// remove drops the server at i, moving the last into its place. The
// caller holds mu.
func (r *Registry) remove(i int) {
	r.generation.Add(1)
	s := r.servers[i]
	delete(r.index, s.addr)
	if r.perAddr[s.addr.Addr()]--; r.perAddr[s.addr.Addr()] <= 0 {
		delete(r.perAddr, s.addr.Addr())
	}
	last := len(r.servers) - 1
	if i != last {
		r.servers[i], r.servers[last] = r.servers[last], s // keep s's buffers for reuse
		r.index[r.servers[i].addr] = i
	}
	r.servers = r.servers[:last]
}

// forget drops the challenge c waiting at addr. The caller holds mu.
func (r *Registry) forget(addr netip.AddrPort, c challenge) {
	delete(r.pending, addr)
	if r.perSource[c.source]--; r.perSource[c.source] <= 0 {
		delete(r.perSource, c.source)
	}
	if r.perNet[c.network]--; r.perNet[c.network] <= 0 {
		delete(r.perNet, c.network)
	}
}

// evictSample is how many waiting challenges are looked at to choose the
// one forgotten when max_challenges wait.
const evictSample = 8

// challenge records c as the challenge sent to addr, unless one is
// already waiting there (a heartbeat does not extend it), or
// MaxChallengesPerAddress wait at its source already and addr is not a
// listed server: heartbeats forged from one source then never make another
// source's challenge forgotten, nor keep a listed server from its own.
// When MaxChallenges wait in all, one is forgotten to make room: of a
// few taken at random, preferably one sent to an address with no server
// listed, then one of the network (/24, /48) with the most waiting, then
// of the source with the most waiting. So a server already listed keeps
// its challenge through a flood (a forger would have to spoof listed
// addresses, MaxChallengesPerAddress each), and a flood from few sources
// or networks mostly forgets its own. A flood forged from as many
// networks as it has heartbeats ties with a new server's challenge: it
// is forgotten at random, the flood shortening the time a new server has
// to answer (MaxChallenges over the flood's rate) rather than locking
// every new server out while it lasts.
func (r *Registry) challenge(addr netip.AddrPort, c []byte, cfg *Config) Verdict {
	now := r.clock.Now()
	source := clientaddr.Key(addr.Addr(), cfg.ClientIPv6Prefix)
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pending[addr]; ok {
		if now < p.expires {
			return HeartbeatPending
		}
		r.forget(addr, p)
	}
	// A listed server is challenged whatever waits at its source: forged
	// heartbeats from its IP on other ports must not get it delisted. At
	// most one challenge per listed server waits, so this stays bounded
	// by MaxServers.
	if _, listed := r.index[addr]; !listed && r.perSource[source] >= cfg.MaxChallengesPerAddress {
		r.sweep(now, false)
		if r.perSource[source] >= cfg.MaxChallengesPerAddress {
			return DroppedChallengesFull
		}
	}
	v := Challenged
	if len(r.pending) >= cfg.MaxChallenges {
		r.sweep(now, false)
		for len(r.pending) >= cfg.MaxChallenges {
			var victim netip.AddrPort
			var vc challenge
			best, seen := [3]int{-1}, 0
			for a, p := range r.pending {
				unlisted := 0
				if r.perAddr[a.Addr()] == 0 {
					unlisted = 1
				}
				score := [3]int{unlisted, r.perNet[p.network], r.perSource[p.source]}
				if slices.Compare(score[:], best[:]) > 0 {
					victim, vc, best = a, p, score
				}
				if seen++; seen == evictSample {
					break
				}
			}
			r.forget(victim, vc)
			v = ChallengedEvicting
		}
	}
	p := challenge{expires: now + int64(cfg.ChallengeTimeout), source: source,
		network: clientaddr.Network(addr.Addr(), 0, 0), n: uint8(len(c))}
	copy(p.b[:], c)
	r.pending[addr] = p
	r.perSource[source]++
	r.perNet[p.network]++
	return v
}

// calmSource is a source answered in full while the reply budget was
// calm: first at since, last KnownSourceLifetime before until.
type calmSource struct{ since, until int64 }

// knownSource reports whether the source at addr (key: its source) is
// known: a server is listed at its address, or it was first answered in
// full while the reply budget was calm at or before settled, and again
// within KnownSourceLifetime. The caller holds mu (read).
func (r *Registry) knownSource(addr netip.Addr, key netip.Prefix, settled, now int64) bool {
	if r.perAddr[addr] > 0 {
		return true
	}
	r.knownMu.Lock()
	c, ok := r.known[key]
	r.knownMu.Unlock()
	return ok && c.since <= settled && now < c.until
}

// remember records that the source key was answered in full at now while
// the reply budget was calm: it is known from then on (see knownSource)
// for KnownSourceLifetime, unless maxSources are known already. A source
// still known keeps the time it was first answered.
func (r *Registry) remember(key netip.Prefix, now int64, maxSources int) {
	r.knownMu.Lock()
	defer r.knownMu.Unlock()
	c, ok := r.known[key]
	if ok && now < c.until {
		c.until = now + int64(KnownSourceLifetime)
		r.known[key] = c
		return
	}
	if !ok && len(r.known) >= maxSources {
		if now < r.knownSweep {
			return
		}
		r.knownSweep = now + sweepEvery
		for k, c := range r.known {
			if now >= c.until {
				delete(r.known, k)
			}
		}
		if len(r.known) >= maxSources {
			return
		}
	}
	r.known[key] = calmSource{since: now, until: now + int64(KnownSourceLifetime)}
}

// waiting reports whether a challenge sent to addr is waiting: a cheap
// test before an infoResponse is decoded.
func (r *Registry) waiting(addr netip.AddrPort) bool {
	r.mu.RLock()
	_, ok := r.pending[addr]
	r.mu.RUnlock()
	return ok
}

// register lists or refreshes the server at addr if in answers the
// challenge waiting there.
func (r *Registry) register(addr netip.AddrPort, in *wire.Info, cfg *Config) Verdict {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pending[addr]
	waited := ok && now < p.expires && bytes.Equal(p.b[:p.n], in.Challenge)
	if ok && now >= p.expires {
		r.forget(addr, p)
	}
	if !waited && !r.made(in.Challenge, addr, now, cfg.ChallengeTimeout.Std()) {
		return DroppedUnexpected // the right answer may still come
	}
	if waited {
		r.forget(addr, p)
	}
	// A waiting challenge is used once (forgotten now); one checked by
	// its hash alone must be newer than the one that last listed the
	// server.
	slot, _ := slotOf(in.Challenge, now)
	if i, known := r.index[addr]; known && !waited && slot <= r.servers[i].provenSlot {
		return DroppedUnexpected
	}
	i, known := r.index[addr]
	v := Refreshed
	if !known {
		if len(r.servers) >= cfg.MaxServers || r.perAddr[addr.Addr()] >= cfg.MaxServersPerAddress {
			r.sweep(now, true)
		}
		if len(r.servers) >= cfg.MaxServers || r.perAddr[addr.Addr()] >= cfg.MaxServersPerAddress {
			return DroppedServersFull
		}
		i, v = r.list(addr), Registered
	}
	r.servers[i].set(addr, now+int64(cfg.Expiry), in.Name(), in.Raw, in.Protocol, in.Clients, in.MaxClients, in.GameType)
	r.generation.Add(1)
	r.servers[i].provenSlot = slot
	r.queueShared(i, cfg)
	r.sweep(now, false)
	return v
}

// list gives the server at addr a new slot of r.servers, counted under its
// address, and returns the slot. r.mu is held and the limits are checked.
func (r *Registry) list(addr netip.AddrPort) int {
	i := len(r.servers)
	if i < cap(r.servers) {
		r.servers = r.servers[:i+1] // the slot's buffers are reused
	} else {
		r.servers = append(r.servers, server{})
	}
	r.servers[i].provenSlot = math.MinInt64
	r.index[addr] = i
	r.perAddr[addr.Addr()]++
	return i
}

// set records what the server at addr said of itself, until expires.
func (s *server) set(addr netip.AddrPort, expires int64, name, info []byte, protocol, clients, maxClients, gameType int) {
	s.addr, s.expires = addr, expires
	s.name = append(s.name[:0], name...)
	s.protocol, s.clients, s.maxClients, s.gameType = protocol, clients, maxClients, gameType
	s.info = AppendKeptInfo(s.info[:0], info)
}

// InfoKeys are the keys of an infoResponse the registry keeps, in this
// order: what a list shows of a server before its status is queried.
var InfoKeys = []string{"hostname", "mapname", "gamename", "gametype", "protocol", "clients", "sv_maxclients",
	"g_needpass", "g_humanplayers", "bots"}

// MaxInfoValue bounds each value the registry keeps of an infoResponse,
// in bytes; a longer one is cut.
const MaxInfoValue = 128

// AppendKeptInfo appends to dst what the registry keeps of the info
// string info (\key\value…): the values of InfoKeys, each cut to
// MaxInfoValue bytes: at most len(InfoKeys) × (MaxInfoValue + 16) bytes
// in all.
func AppendKeptInfo(dst, info []byte) []byte {
	for _, k := range InfoKeys {
		v, ok := wire.InfoValue(info, k)
		if !ok {
			continue
		}
		if len(v) > MaxInfoValue {
			v = v[:MaxInfoValue]
		}
		dst = append(dst, '\\')
		dst = append(dst, k...)
		dst = append(dst, '\\')
		dst = append(dst, v...)
	}
	return dst
}

// Len reports how many servers are listed and how many challenges wait,
// forgetting expired ones first.
func (r *Registry) Len() (servers, challenges int) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now, true)
	return len(r.servers), len(r.pending)
}

// Generation changes whenever a server is listed, refreshed (its
// infoResponse, its expiry) or forgotten; a server's expiry passing
// hides it from Servers before it changes (Server.Expires says when).
// What a caller made of Servers, having read Generation first, holds
// while it is unchanged and no server expired.
func (r *Registry) Generation() uint64 { return r.generation.Load() }

// Server is what the registry knows of a listed server.
type Server struct {
	Addr       netip.AddrPort
	GameName   string
	Protocol   int
	Clients    int
	MaxClients int
	GameType   int
	// Info is the info string of its last infoResponse, \key\value….
	Info []byte
	// Expires is when it leaves the list unless it answers again.
	Expires time.Duration // from now
}

// Servers appends a copy of every listed server to dst.
func (r *Registry) Servers(dst []Server) []Server {
	now := r.clock.Now()
	r.mu.RLock()
	defer r.mu.RUnlock()
	for i := range r.servers {
		s := &r.servers[i]
		if now >= s.expires {
			continue
		}
		dst = append(dst, Server{Addr: s.addr, GameName: string(s.name), Protocol: s.protocol, Clients: s.clients,
			MaxClients: s.maxClients, GameType: s.gameType, Info: bytes.Clone(s.info), Expires: time.Duration(s.expires - now)})
	}
	return dst
}
