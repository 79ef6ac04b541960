package master

import (
	"crypto/rand"
	"hash/maphash"
	"net/netip"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wire "github.com/gamegate/gamegate/wire/master"
)

// Verdict says what the master did with a datagram.
type Verdict uint8

// Verdicts.
const (
	Challenged            Verdict = iota // a heartbeat was answered with getinfo
	ChallengedEvicting                   // a heartbeat was answered with getinfo, forgetting another waiting challenge (max_challenges)
	HeartbeatPending                     // a heartbeat came while a challenge to its address waits: ignored
	Registered                           // an infoResponse with the right challenge listed a new server
	Refreshed                            // an infoResponse with the right challenge refreshed a listed server
	Listed                               // a list request was answered in full
	ListCut                              // a list request was answered with max_reply_datagrams, the list cut
	DroppedMalformed                     // not a valid message, or a heartbeat too short to answer
	DroppedRateLimited                   // a heartbeat or list request over its source's rate
	DroppedUnexpected                    // an infoResponse no challenge waits for, or with another challenge
	DroppedServersFull                   // a new server past max_servers or max_servers_per_address
	DroppedChallengesFull                // a heartbeat from a source with max_challenges_per_address waiting
	DroppedOverCapacity                  // a list request past the reply_rate budget of all sources
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

// challengeAlphabet has 64 characters a challenge may carry, so a random
// byte's low six bits pick one without bias.
const challengeAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// Master serves the master-server protocol. Build it with New.
type Master struct {
	cfg        Config
	reg        *Registry
	heartbeats limits
	lists      limits
	heartbeat  ratelimit.Limit
	list       ratelimit.Limit
	reply      ratelimit.Limit
	replyState ratelimit.AtomicState
	clock      ratelimit.Clock
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
	var err error
	if m.heartbeat, err = ratelimit.NewLimit(cfg.HeartbeatRate, cfg.HeartbeatBurst); err != nil {
		return nil, err
	}
	if m.list, err = ratelimit.NewLimit(cfg.ListRate, cfg.ListBurst); err != nil {
		return nil, err
	}
	if m.reply, err = ratelimit.NewLimit(cfg.ReplyRate, cfg.ReplyBurst); err != nil {
		return nil, err
	}
	m.heartbeats.init(cfg.MaxSources, m.clock)
	m.lists.init(cfg.MaxSources, m.clock)
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
	_, _ = rand.Read(c[:n])
	for i := range n {
		c[i] = challengeAlphabet[c[i]&63]
	}
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
	if !m.reg.waiting(src) {
		return DroppedUnexpected
	}
	var in wire.Info
	if err := in.Decode(datagram); err != nil {
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
// MaxReplyDatagrams of them, each taken from the reply budget of all
// sources; the last ends with EOT.
func (m *Master) listFor(w sender, src netip.AddrPort, datagram []byte) Verdict {
	if !m.lists.allow(m.list, clientaddr.Key(src.Addr(), m.cfg.ClientIPv6Prefix)) {
		return DroppedRateLimited
	}
	var q wire.Query
	if err := q.Decode(datagram); err != nil {
		return DroppedMalformed
	}
	if !m.reply.AllowAtomic(&m.replyState, m.clock.Now()) {
		return DroppedOverCapacity
	}
	name := q.Name()
	want4, want6 := q.WantsIPv4(), q.WantsIPv6()
	clientScope := scope(src.Addr())
	room := wire.MaxResponseDatagram - wire.EOTLen
	sent, v := 1, Listed
	buf := wire.AppendResponseHeader(w.Buffer(wire.MaxResponseDatagram), q.Ext)

	r := m.reg
	now := r.clock.Now()
	r.mu.RLock()
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
		if len(buf)+wire.EntryLen(s.addr) > room {
			if sent == m.cfg.MaxReplyDatagrams || !m.reply.AllowAtomic(&m.replyState, m.clock.Now()) {
				v = ListCut
				break
			}
			m.send(w, buf, src)
			sent++
			buf = wire.AppendResponseHeader(w.Buffer(wire.MaxResponseDatagram), q.Ext)
		}
		buf = wire.AppendEntry(buf, s.addr)
	}
	r.mu.RUnlock()
	m.send(w, wire.AppendEOT(buf), src)
	return v
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

func (l *limits) allow(lim ratelimit.Limit, key netip.Prefix) bool {
	a := key.Addr().As16()
	ok, _ := l.shards[maphash.Bytes(l.seed, a[:])%limitShards].Allow(lim, key)
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
