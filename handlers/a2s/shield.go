package a2s

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/cache"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// Verdict says what the shield did with a datagram.
type Verdict uint8

// Verdicts.
const (
	Answered           Verdict = iota // a cached answer was sent to a source that proved its address
	Challenged                        // a request without a valid challenge got S2C_CHALLENGE
	DroppedMalformed                  // not an A2S request
	DroppedNoAnswer                   // the upstream has not answered and nothing is cached
	DroppedSourceLimit                // the source had its answers or answer bytes for now
	DroppedTotalLimit                 // all sources together had their answer bytes for now
	DroppedTooShort                   // a request shorter than its answer, from a source that has not proven its address
	NumVerdicts
)

func (v Verdict) String() string {
	switch v {
	case Answered:
		return "answered"
	case Challenged:
		return "challenged"
	case DroppedMalformed:
		return "dropped_malformed"
	case DroppedNoAnswer:
		return "dropped_no_answer"
	case DroppedSourceLimit:
		return "dropped_source_limit"
	case DroppedTotalLimit:
		return "dropped_total_limit"
	case DroppedTooShort:
		return "dropped_too_short"
	}
	return "unknown"
}

const keyLen = sha256.Size

// MaxSingle is the largest answer the shield sends as one datagram; longer
// ones are split, as Source servers do (the wiki's 1400-byte packets).
const MaxSingle = 1400

// ShieldConfig is the behaviour of a Shield.
type ShieldConfig struct {
	// Upstream is the game server's query address, host:port.
	Upstream string
	// Client queries the upstream.
	Client *Client
	// Cache is how long answers are reused (TTL) and served stale; its
	// LoadTimeout bounds one upstream query. A zero TTL means 5s.
	Cache cache.Policy
	// ChallengeWindow is how long a challenge stays valid: between one and
	// two windows. Default: 30s.
	ChallengeWindow time.Duration
	// Key is the secret challenges are made with. Default: random, so
	// challenges do not survive a restart (clients then get a new one).
	Key []byte
	// Layout of split answers. Default: LayoutAuto, the upstream's own
	// (the layout it split with, or the one its AppID uses).
	Layout wirea2s.Layout
	// MaxPayload is the payload of each fragment of a split answer.
	// Default: wire/a2s's DefaultMaxPayload (1248).
	MaxPayload int
	// Limits bounds the answers sent, per source and in all. Default: the
	// Default* constants.
	Limits Limits
	// Decompress serves an answer the upstream compressed uncompressed;
	// otherwise it is served compressed as it came (re-split).
	Decompress bool
	// OnUpstream is called for every upstream query (metrics).
	OnUpstream func()
	// Now gives the time. Default: time.Now.
	Now func() time.Time
}

// Shield answers A2S queries for one game server from a cache, so the game
// server sees at most one query of each kind per TTL however many clients
// ask. Every request must carry a challenge the shield gave its source
// address: a MAC of that address and the time window under a secret key,
// so challenges cost no memory, and a spoofed source, which never sees its
// challenge, only ever gets an S2C_CHALLENGE of 9 bytes, never more than
// it sent.
type Shield struct {
	cfg     ShieldConfig
	limits  *answerLimits
	results *cache.Results[wirea2s.Type, *served]
	loads   [3]func(context.Context) (*served, error)
	key     [keyLen]byte
	nextID  atomic.Uint32
}

// served is an answer ready to send: its datagrams, built once per load.
type served struct {
	datagrams [][]byte
	layout    wirea2s.Layout // the upstream's split layout, if it split
	appID     uint16
	protocol  byte
	info      bool
}

// NewShield returns a Shield for cfg.
func NewShield(cfg ShieldConfig) (*Shield, error) {
	if cfg.Upstream == "" || cfg.Client == nil {
		return nil, errors.New("a2s shield: an upstream and a client are required")
	}
	if cfg.Cache.TTL <= 0 {
		cfg.Cache.TTL = 5 * time.Second
	}
	if cfg.ChallengeWindow <= 0 {
		cfg.ChallengeWindow = 30 * time.Second
	}
	if cfg.MaxPayload <= 0 {
		cfg.MaxPayload = wirea2s.DefaultMaxPayload
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Key) == 0 {
		cfg.Key = make([]byte, 32)
		if _, err := rand.Read(cfg.Key); err != nil {
			return nil, err
		}
	}
	results, err := cache.NewResults[wirea2s.Type, *served](4, cfg.Now)
	if err != nil {
		return nil, err
	}
	limits, err := newAnswerLimits(cfg.Limits, cfg.Now)
	if err != nil {
		return nil, err
	}
	s := &Shield{cfg: cfg, results: results, limits: limits}
	s.key = sha256.Sum256(cfg.Key) // any key length, one fixed-size secret
	s.nextID.Store(uint32(time.Now().UnixNano()))
	for i, t := range []wirea2s.Type{wirea2s.TypeInfoRequest, wirea2s.TypePlayerRequest, wirea2s.TypeRulesRequest} {
		s.loads[i] = func(ctx context.Context) (*served, error) { return s.load(ctx, t) }
	}
	return s, nil
}

// challenge returns the challenge of src in time window w: the first four
// bytes of SHA-256 over the key, the window, the address and the port. The
// input has a fixed length, so SHA-256's length extension gives nothing
// that is ever checked; and it allocates nothing, unlike crypto/hmac.
func (s *Shield) challenge(src netip.AddrPort, w int64) int32 {
	var b [keyLen + 8 + 16 + 2]byte
	copy(b[:], s.key[:])
	binary.LittleEndian.PutUint64(b[keyLen:], uint64(w))
	a := src.Addr().As16()
	copy(b[keyLen+8:], a[:])
	binary.LittleEndian.PutUint16(b[keyLen+24:], src.Port())
	sum := sha256.Sum256(b[:])
	c := int32(binary.LittleEndian.Uint32(sum[:]))
	if c == wirea2s.NoChallenge {
		c = 0 // -1 asks for a challenge; never give it out as one
	}
	return c
}

func (s *Shield) window() int64 { return s.cfg.Now().UnixNano() / int64(s.cfg.ChallengeWindow) }

// Valid reports whether c is the challenge src was given in this window or
// the one before.
func (s *Shield) Valid(src netip.AddrPort, c int32) bool {
	w := s.window()
	return c == s.challenge(src, w) || c == s.challenge(src, w-1)
}

// Challenge appends to out the S2C_CHALLENGE for src.
func (s *Shield) Challenge(out []byte, src netip.AddrPort) []byte {
	return wirea2s.AppendChallenge(out, s.challenge(src, s.window()))
}

// Classify decides, without waiting, what a datagram from src needs: an
// S2C_CHALLENGE (written to out), a cached answer (ok: call Serve with
// typ), or nothing. It never sends a source that has not proven its address
// more bytes than it sent.
//
// The legacy challenge request (0x57) is answered as game servers answer
// it, with S2C_CHALLENGE, when it is at least as long as that answer (9
// bytes: the request and four bytes more, -1 say); sent alone (5 bytes)
// it gets nothing (DroppedTooShort), as a reply would be larger than it.
func (s *Shield) Classify(src netip.AddrPort, datagram []byte, out []byte) (reply []byte, typ wirea2s.Type, serve bool, v Verdict) {
	var q wirea2s.Request
	if err := q.Decode(datagram); err != nil {
		return out, 0, false, DroppedMalformed
	}
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	if q.Type == wirea2s.TypeChallengeRequest || !q.HasChallenge || q.Challenge == wirea2s.NoChallenge || !s.Valid(src, q.Challenge) {
		reply = s.Challenge(out, src)
		if len(reply)-len(out) > len(datagram) {
			return out, 0, false, DroppedTooShort
		}
		return reply, 0, false, Challenged
	}
	return out, q.Type, true, Answered
}

// Serve returns the datagrams answering a request of type typ from a source
// that passed its challenge: from the cache, or after one upstream query
// shared by everyone asking. The datagrams are shared and must not be
// modified. It returns nil when the upstream has not answered.
func (s *Shield) Serve(ctx context.Context, typ wirea2s.Type) [][]byte {
	a, err := s.get(ctx, typ)
	if err != nil || a == nil {
		return nil
	}
	return a.datagrams
}

// ServeCached returns at once the datagrams answering a request of type
// typ from a source that passed its challenge, from the cache (fresh, or
// stale while one refresh runs), without waiting for the upstream. When
// nothing usable is cached it starts the one upstream query everyone
// shares and returns pending true: Serve then waits for it. It returns
// nil and pending false when the upstream failed recently (a cached
// failure) or typ is not a request type.
func (s *Shield) ServeCached(typ wirea2s.Type) (datagrams [][]byte, pending bool) {
	a, err := s.get(noWait, typ)
	if err != nil {
		return nil, errors.Is(err, context.Canceled)
	}
	if a == nil {
		return nil, false
	}
	return a.datagrams, false
}

// noWait is a context that has ended: a cache Get given it returns what is
// cached at once and leaves a load it starts running for later callers.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (s *Shield) get(ctx context.Context, typ wirea2s.Type) (*served, error) {
	i := int(typ - wirea2s.TypeInfoRequest)
	if i < 0 || i >= len(s.loads) {
		return nil, errors.New("a2s shield: not a request type")
	}
	res, err := s.results.Get(ctx, typ, s.cfg.Cache, s.loads[i])
	if err != nil {
		return nil, err
	}
	return res.Value, nil
}

// load queries the upstream and builds the datagrams to serve.
func (s *Shield) load(ctx context.Context, typ wirea2s.Type) (*served, error) {
	if s.cfg.OnUpstream != nil {
		s.cfg.OnUpstream()
	}
	a, err := s.cfg.Client.Query(ctx, s.cfg.Upstream, typ)
	if err != nil {
		return nil, err
	}
	out := &served{layout: a.Layout}
	if typ == wirea2s.TypeInfoRequest {
		var m wirea2s.Info
		if err := m.Decode(a.Message); err != nil {
			return nil, &ProtocolError{Err: err}
		}
		out.info, out.appID, out.protocol = true, m.AppID, m.Protocol
		if m.GoldSrc {
			out.appID = 0 // GoldSrc layout
		}
	}
	compressed := a.Compressed != nil && !s.cfg.Decompress
	if len(a.Message) <= MaxSingle && !compressed {
		out.datagrams = [][]byte{a.Message}
		return out, nil
	}
	layout := s.layout(ctx, out)
	id := s.nextID.Add(1) &^ wirea2s.CompressedFlag
	payload, size, crc := a.Message, uint32(0), uint32(0)
	if compressed && layout != wirea2s.LayoutGoldSrc {
		id |= wirea2s.CompressedFlag
		payload, size, crc = a.Compressed, a.Size, a.CRC
	}
	sp := wirea2s.Splitter{Layout: layout, MaxPayload: s.cfg.MaxPayload}
	if out.datagrams, err = sp.Split(nil, id, payload, size, crc); err != nil {
		return nil, &ProtocolError{Err: err}
	}
	return out, nil
}

// layout picks the split layout: the configured one, the upstream's own
// when it split this answer, else the one its AppID uses.
func (s *Shield) layout(ctx context.Context, a *served) wirea2s.Layout {
	if s.cfg.Layout != wirea2s.LayoutAuto {
		return s.cfg.Layout
	}
	if a.layout != wirea2s.LayoutAuto {
		return a.layout
	}
	info := a
	if !a.info {
		if i, err := s.get(ctx, wirea2s.TypeInfoRequest); err == nil && i != nil {
			info = i
		}
	}
	if info.info {
		return wirea2s.LayoutFor(info.appID, info.protocol)
	}
	return wirea2s.LayoutSource
}

// Admit decides whether src, which passed its challenge, is sent the
// answer datagrams now, and counts them against its limits and the total
// if so: Answered, DroppedSourceLimit or DroppedTotalLimit. The game server
// limits queries per address too; without this a validated source would
// draw an answer of up to max_response_size bytes for each 9-byte request, as
// fast as it asks. It allocates nothing.
func (s *Shield) Admit(src netip.AddrPort, datagrams [][]byte) Verdict {
	n := 0
	for _, d := range datagrams {
		n += len(d)
	}
	return s.limits.admit(src, n)
}

// Close ends the shield's upstream queries: those running are cancelled
// (their waiters get no answer) and none starts after it; cached answers
// are still served. The queries are shared by every request asking, so no
// request's cancellation ends them; Close is for the owner that stops
// using the shield, such as a configuration being unloaded.
func (s *Shield) Close() { s.results.Close() }

// Stats returns the cache's counters.
func (s *Shield) Stats() cache.ResultStats { return s.results.Stats() }
