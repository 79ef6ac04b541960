package master

import (
	"hash/maphash"
	"math"
	"net/netip"
	"sync/atomic"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wire "github.com/gamegate/gamegate/wire/master"
)

// Verdict says what the master did with a datagram.
type Verdict uint8

// Verdicts.
const (
	Challenged                 Verdict = iota // a heartbeat was answered with getinfo
	ChallengedEvicting                        // a heartbeat was answered with getinfo, forgetting another waiting challenge (max_challenges)
	HeartbeatPending                          // a heartbeat came while a challenge to its address waits: ignored
	Registered                                // an infoResponse with the right challenge listed a new server
	Refreshed                                 // an infoResponse with the right challenge refreshed a listed server
	Listed                                    // a list request was answered in full
	ListCut                                   // a list request was answered with max_reply_datagrams, the list cut
	DroppedMalformed                          // not a valid message, or a heartbeat too short to answer
	DroppedRateLimited                        // a heartbeat or list request over its source's rate
	DroppedUnexpected                         // an infoResponse no challenge waits for, or with another challenge
	DroppedServersFull                        // a new server past max_servers or max_servers_per_address
	DroppedChallengesFull                     // a heartbeat from a source with max_challenges_per_address waiting
	DroppedOverCapacity                       // a list request past the reply_rate budget of all sources
	DroppedNetworkOverCapacity                // a list request past its network's share of the budget (network_reply_rate)
	NumVerdicts
)

func (v Verdict) String() string {
	switch v {
	case Challenged:
		return "challenged"
	case ChallengedEvicting:
		return "challenged_evicting"
	case HeartbeatPending:
		return "heartbeat_pending"
	case Registered:
		return "registered"
	case Refreshed:
		return "refreshed"
	case Listed:
		return "listed"
	case ListCut:
		return "list_cut"
	case DroppedMalformed:
		return "dropped_malformed"
	case DroppedRateLimited:
		return "dropped_rate_limited"
	case DroppedUnexpected:
		return "dropped_unexpected"
	case DroppedServersFull:
		return "dropped_servers_full"
	case DroppedChallengesFull:
		return "dropped_challenges_full"
	case DroppedOverCapacity:
		return "dropped_over_capacity"
	case DroppedNetworkOverCapacity:
		return "dropped_network_over_capacity"
	}
	return "unknown"
}

// Challenge lengths. A getinfo is never longer than the heartbeat it
// answers (the heartbeat's source is not proven yet): its challenge is
// as long as that allows, up to maxChallengeSent characters; a heartbeat
// too short for minChallengeSent is dropped ("heartbeat X\n" is; the
// protocol strings of real servers are long enough).
const (
	maxChallengeSent = 12
	minChallengeSent = 8
)

// challengeAlphabet has 64 characters a challenge may carry, so a byte's
// low six bits pick one without bias.
const challengeAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// Master serves the master-server protocol. Build it with New.
type Master struct {
	cfg        Config
	reg        *Registry
	heartbeats limits
	lists      limits
	heartbeat  ratelimit.Limit
	list       ratelimit.Limit
	clock      ratelimit.Clock

	// The reply budget: the part any source may take (reply_rate less
	// known_reply_rate), the part kept for known sources, and each
	// network's share.
	open, known           ratelimit.Limit
	openState, knownState ratelimit.AtomicState
	network               ratelimit.Limit
	networks              limits
	// When the open part last refused an answer, and when it began to
	// (the first refusal after KnownSourceSettle without any).
	lastRefusal, pressureSince atomic.Int64
}

// New returns a Master with cfg, which Validate must accept.
func New(cfg Config) (*Master, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	m := &Master{cfg: cfg, reg: cfg.Registry, clock: ratelimit.NewClock(cfg.Now)}
	if m.reg == nil {
		m.reg = NewRegistry(cfg.Now)
	}
	m.reg.maxServers.Store(int64(cfg.MaxServers))
	shared, err := cfg.sharedNetworks()
	if err != nil {
		return nil, err
	}
	m.reg.sharedNetworks.Store(&shared)
	if m.heartbeat, err = ratelimit.NewLimit(cfg.HeartbeatRate, cfg.HeartbeatBurst); err != nil {
		return nil, err
	}
	if m.list, err = ratelimit.NewLimit(cfg.ListRate, cfg.ListBurst); err != nil {
		return nil, err
	}
	if m.open, err = ratelimit.NewLimit(cfg.ReplyRate-cfg.KnownReplyRate, max(cfg.ReplyBurst-cfg.KnownReplyBurst, 1)); err != nil {
		return nil, err
	}
	if m.known, err = ratelimit.NewLimit(cfg.KnownReplyRate, cfg.KnownReplyBurst); err != nil {
		return nil, err
	}
	if m.network, err = ratelimit.NewLimit(cfg.NetworkReplyRate, cfg.NetworkReplyBurst); err != nil {
		return nil, err
	}
	m.heartbeats.init(cfg.MaxSources, m.clock)
	m.lists.init(cfg.MaxSources, m.clock)
	m.networks.init(cfg.MaxSources, m.clock)
	m.lastRefusal.Store(math.MinInt64 / 2)
	m.pressureSince.Store(math.MinInt64 / 2)
	return m, nil
}

// Registry returns the master's registry.
func (m *Master) Registry() *Registry { return m.reg }

// Sources reports how many sources the heartbeat and list limits hold.
func (m *Master) Sources() (heartbeats, lists int) { return m.heartbeats.len(), m.lists.len() }

// Match reports whether datagram is a message a master receives:
// heartbeat, infoResponse, getservers or getserversExt.
func (m *Master) Match(datagram []byte) bool {
	switch wire.Peek(datagram) {
	case wire.KindHeartbeat, wire.KindInfoResponse, wire.KindGetServers, wire.KindGetServersExt:
		return true
	}
	return false
}

// ServeDatagram handles one datagram from src, appending what it sends to
// w.
func (m *Master) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	v := m.serve(w, src, datagram)
	if m.cfg.Count != nil {
		m.cfg.Count(v)
	}
}

// sender is what the master sends through: a *dgram.Writer.
type sender interface {
	Buffer(n int) []byte
	WriteTo(b []byte, to netip.AddrPort)
}

func (m *Master) serve(w sender, src netip.AddrPort, datagram []byte) Verdict {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	var v Verdict
	switch wire.Peek(datagram) {
	case wire.KindHeartbeat:
		v = m.heartbeatFrom(w, src, datagram)
	case wire.KindInfoResponse:
		v = m.infoFrom(src, datagram)
	case wire.KindGetServers, wire.KindGetServersExt:
		v = m.listFor(w, src, datagram)
	default:
		v = DroppedMalformed
	}
	return v
}

func (m *Master) heartbeatFrom(w sender, src netip.AddrPort, datagram []byte) Verdict {
	if !m.heartbeats.allow(m.heartbeat, clientaddr.Key(src.Addr(), m.cfg.ClientIPv6Prefix)) {
		return DroppedRateLimited
	}
	if _, err := wire.DecodeHeartbeat(datagram); err != nil {
		return DroppedMalformed
	}
	n := min(maxChallengeSent, len(datagram)-wire.GetInfoLen(0))
	if n < minChallengeSent || src.Port() == 0 {
		return DroppedMalformed
	}
	var c [maxChallengeSent]byte
	m.reg.mint(c[:n], src, m.reg.clock.Now())
	v := m.reg.challenge(src, c[:n], &m.cfg)
	if v == HeartbeatPending || v == DroppedChallengesFull {
		return v
	}
	out, err := wire.AppendGetInfo(w.Buffer(wire.GetInfoLen(n)), c[:n])
	if err == nil {
		m.send(w, out, src)
	}
	return v
}

func (m *Master) infoFrom(src netip.AddrPort, datagram []byte) Verdict {
	var in wire.Info
	if !m.reg.waiting(src) {
		// Its challenge may have been forgotten (max_challenges) or used:
		// only one this registry made for src, in time, can still list it.
		if in.Decode(datagram) != nil || !m.reg.made(in.Challenge, src, m.reg.clock.Now(), m.cfg.ChallengeTimeout.Std()) {
			return DroppedUnexpected
		}
	} else if err := in.Decode(datagram); err != nil {
		return DroppedMalformed
	}
	return m.reg.register(src, &in, &m.cfg)
}

func (m *Master) send(w sender, b []byte, to netip.AddrPort) {
	w.WriteTo(b, to)
	if m.cfg.Sent != nil {
		m.cfg.Sent(len(b))
	}
}

// listFor answers a getservers or getserversExt: the matching servers in
// datagrams of at most wire.MaxResponseDatagram bytes, at most
// MaxReplyDatagrams of them, the last ending with EOT. The whole answer is
// taken at once from its network's share of the reply budget and from the
// budget (the open part, then, for a known source, the part kept for
// known sources), or not sent at all: a budget running out never cuts a
// list.
func (m *Master) listFor(w sender, src netip.AddrPort, datagram []byte) Verdict {
	key := clientaddr.Key(src.Addr(), m.cfg.ClientIPv6Prefix)
	if !m.lists.allow(m.list, key) {
		return DroppedRateLimited
	}
	var q wire.Query
	if err := q.Decode(datagram); err != nil {
		return DroppedMalformed
	}
	r := m.reg
	now := r.clock.Now()
	r.mu.RLock()
	defer r.mu.RUnlock()
	datagrams, cut := r.layout(&q, src.Addr(), m.cfg.MaxReplyDatagrams, now, nil)
	if !m.networks.allowN(m.network, clientaddr.Network(src.Addr(), 0, 0), int64(datagrams)) {
		return DroppedNetworkOverCapacity
	}
	switch {
	case m.open.AllowNAtomic(&m.openState, now, int64(datagrams)):
		if !cut && m.open.Backlog(m.openState.Load(), now) <= m.open.Window()/2 {
			r.remember(key, now, m.cfg.MaxSources)
		}
	case !r.knownSource(src.Addr(), key, m.underPressure(now)-int64(KnownSourceSettle), now) ||
		!m.known.AllowNAtomic(&m.knownState, now, int64(datagrams)):
		return DroppedOverCapacity
	}
	buf, at := wire.AppendResponseHeader(w.Buffer(wire.MaxResponseDatagram), q.Ext), 0
	r.layout(&q, src.Addr(), m.cfg.MaxReplyDatagrams, now, func(d int, addr netip.AddrPort) {
		if d != at {
			m.send(w, buf, src)
			buf, at = wire.AppendResponseHeader(w.Buffer(wire.MaxResponseDatagram), q.Ext), d
		}
		buf = wire.AppendEntry(buf, addr)
	})
	m.send(w, wire.AppendEOT(buf), src)
	if cut {
		return ListCut
	}
	return Listed
}

// underPressure records that the open part of the reply budget refused
// an answer at now, and returns when it began to: at the first refusal
// after KnownSourceSettle without any.
func (m *Master) underPressure(now int64) int64 {
	if last := m.lastRefusal.Swap(now); now-last > int64(KnownSourceSettle) {
		m.pressureSince.Store(now)
		return now
	}
	return m.pressureSince.Load()
}

// layout lays out the answer to q for a client at client: the servers q
// matches (and client may see), in datagrams of at most
// wire.MaxResponseDatagram bytes with room for EOT in each, at most
// maxDatagrams of them. It calls entry (if not nil) for each server, with
// the index of its datagram, and returns how many datagrams the answer
// takes and whether it leaves servers out. The caller holds mu (read).
func (r *Registry) layout(q *wire.Query, client netip.Addr, maxDatagrams int, now int64, entry func(datagram int, addr netip.AddrPort)) (datagrams int, cut bool) {
	name := q.Name()
	want4, want6 := q.WantsIPv4(), q.WantsIPv6()
	clientScope := scope(client)
	room := wire.MaxResponseDatagram - wire.EOTLen
	header := wire.ResponseHeaderLen(q.Ext)
	d, size := 0, header
	for i := range r.servers {
		s := &r.servers[i]
		ip := s.addr.Addr()
		switch {
		case now >= s.expires, s.protocol != q.Protocol, string(s.name) != string(name),
			!q.Empty && s.clients == 0, !q.Full && s.clients >= s.maxClients,
			q.GameType != wire.NoGameType && s.gameType != q.GameType,
			ip.Is4() && !want4, ip.Is6() && !want6, scope(ip) > clientScope:
			continue
		}
		n := wire.EntryLen(s.addr)
		if size+n > room {
			if d+1 == maxDatagrams {
				return maxDatagrams, true
			}
			d, size = d+1, header
		}
		size += n
		if entry != nil {
			entry(d, s.addr)
		}
	}
	return d + 1, false
}

// Address scopes: a server is listed only to clients in its scope or a
// wider one, so a list never hands a public client a loopback or private
// address.
const (
	scopePublic = iota
	scopePrivate
	scopeLoopback
)

// Visible reports whether a server at addr may be shown to a client at
// client: loopback servers to loopback clients, private ones to private
// and loopback clients, public ones to all.
func Visible(addr, client netip.Addr) bool { return scope(addr.Unmap()) <= scope(client.Unmap()) }

func scope(a netip.Addr) int {
	switch {
	case a.IsLoopback():
		return scopeLoopback
	case a.IsPrivate() || a.IsLinkLocalUnicast():
		return scopePrivate
	}
	return scopePublic
}

// limits is a rate limit's state per source, in shards of bounded tables
// so that sources on different readers rarely share a lock.
type limits struct {
	seed   maphash.Seed
	shards [limitShards]*ratelimit.Table[netip.Prefix]
}

const limitShards = 16

func (l *limits) init(maxSources int, clock ratelimit.Clock) {
	l.seed = maphash.MakeSeed()
	for i := range l.shards {
		l.shards[i] = ratelimit.NewTable[netip.Prefix](max(maxSources/limitShards, 1), clock)
	}
}

func (l *limits) allow(lim ratelimit.Limit, key netip.Prefix) bool { return l.allowN(lim, key, 1) }

// allowN admits n events of key at once, or none.
func (l *limits) allowN(lim ratelimit.Limit, key netip.Prefix, n int64) bool {
	a := key.Addr().As16()
	ok, _ := l.shards[maphash.Bytes(l.seed, a[:])%limitShards].AllowN(lim, key, n)
	return ok
}

func (l *limits) len() int {
	n := 0
	for _, s := range l.shards {
		n += s.Len()
	}
	return n
}

// Interface guards
var _ dgram.Protocol = (*Master)(nil)
