// Package gqp is gamegate's GQP (Gameserver Query Protocol) service, free of
// Caddy: a server that answers the required commands (identify, echo,
// challenge, validate, extensions) and registered custom commands, and a
// client that queries game servers with timeouts, retries and bounded
// multi-datagram responses.
//
// Amplification: a GQP answer is usually larger than its query, so a public
// responder could be used to flood a spoofed address. The server therefore
// sends a source at most as many bytes as its query held, in one datagram,
// unless the source is in a trusted network (default: loopback), which gets
// full answers, or has proven its address and port with challenge/validate,
// which gets at most AuthAmplification times its query's size. Clients get
// full answers by padding their queries with the "pad" extension command
// (its argument is ignored and its reply is empty), which the Client does by
// default.
//
// Authorisation: validate authorises the source address and port that asked
// for the challenge, for AuthTTL. A source (an IPv4 address, or an IPv6
// prefix of ClientIPv6Prefix bits, /64 by default) whose challenges fail
// MaxChallengeFailures times is refused challenges for ChallengeLockout.
// Every table (challenges, authorisations, failures) is bounded by
// MaxAuthorized. When the failure table is full of live failures, a source
// it does not hold is refused challenges (31) rather than allowed guesses it
// cannot count, unless it is trusted. So that one network cannot fill it,
// the table holds at most FailingPerNetwork failing sources of one network
// (an IPv4 /24 or an IPv6 /48) and at most MaxAuthorized/AllocationShares
// of one allocation (an IPv4 /16 or an IPv6 /32) at once: the network's or
// allocation's other sources are refused challenges (31) until some of its
// failures expire. One network thus guesses as FailingPerNetwork sources
// would (not as the 65,536 /64s of a /48), and filling the table takes
// failing sources in AllocationShares allocations (a botnet, or a provider
// holding more than a /29).
//
// Cookies: a failure counts against a source only once the source has shown
// that it receives what is sent to its address and port, or a spoofer could
// lock anyone out by failing in their name. So a challenge from outside the
// trusted networks must carry, as its third argument, the cookie the server
// gives that address and port: a challenge without a valid one checks
// nothing, counts nothing and is answered 32 with the record pair
// "cookie" US <cookie>. The cookie is an HMAC of the address and port under
// a key drawn when the server starts, in a one-minute epoch; it is accepted
// in its epoch and the next (one to two minutes), and the server keeps no
// state for it. Trusted sources may leave it out.
package gqp

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/gamegate/gamegate/internal/clientaddr"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// Identity is what the identify command returns.
type Identity struct {
	// The game's tag (gamename).
	GameName string `json:"gamename,omitempty"`
	// The game's version (gamever).
	GameVer string `json:"gamever,omitempty"`
	// The oldest network version it plays with (netver).
	NetVer string `json:"netver,omitempty"`
}

// Command is a custom command.
type Command struct {
	Name string
	// MinArgs is the fewest arguments the command needs (fewer → status
	// 22). Extra arguments are ignored, as the protocol allows.
	MinArgs int
	// Protected commands answer only sources that passed challenge and
	// validate (others get status 32).
	Protected bool
	// Disabled commands answer status 30.
	Disabled bool
	// Run fills reply (records, text, or nothing for an empty reply) and
	// returns its status. It may block (for example on an upstream) only
	// if Cached is set: Answer, which calls it, then runs off the socket's
	// readers.
	Run func(ctx context.Context, args [][]byte, reply *wiregqp.Reply) wiregqp.Status
	// Cached, set for a Run that may block or whose answer may be large,
	// answers without blocking when it can (from a cache, or an answer
	// made once, as StaticReply's): answer fills a reply as Run would, and
	// its size lets AnswerNow refuse it unbuilt. done is false when only
	// Run can answer; Cached may then start the work Run will wait for
	// (HTTPCommand.Cached starts its upstream request).
	Cached func(args [][]byte) (answer CachedAnswer, done bool)
}

// CachedAnswer is a command's answer that is ready without blocking.
// Command.Cached runs on a socket's reader for every query, forged ones
// included, so it should return an answer made once, when it was cached,
// as HTTPCommand does: then neither Size nor Fill costs anything per query.
type CachedAnswer struct {
	// Fill fills a reply as Run would and returns its status.
	Fill func(*wiregqp.Reply) wiregqp.Status
	// Size is at most the bytes Fill adds to the encoded reply, so that an
	// answer a source may not receive is refused before it is built.
	Size int
}

// PadCommand is the extension command whose argument is ignored and whose
// reply is empty, so a client can make its query as large as the answer it
// expects (see the package doc on amplification).
const PadCommand = "pad"

// Defaults of ServerConfig.
const (
	DefaultAuthTTL              = 10 * time.Minute
	DefaultChallengeTTL         = time.Minute
	DefaultChallengeLockout     = 10 * time.Minute
	DefaultMaxAuthorized        = 10000
	DefaultMaxDatagram          = 1400
	DefaultAuthAmplification    = 10
	DefaultMaxChallengeFailures = 5
)

// ServerConfig is the behaviour of a Server.
type ServerConfig struct {
	Identity Identity
	Commands []Command
	// Logins maps login names to passwords for challenge.
	Logins map[string]string
	// AuthTTL is how long validate authorises a source address and port.
	// Default: 10 minutes.
	AuthTTL time.Duration
	// ChallengeTTL is how long a challenge string may be validated.
	// Default: 1 minute.
	ChallengeTTL time.Duration
	// MaxAuthorized bounds each of the tables of authorised sources,
	// pending challenges and failing sources. Default: 10000.
	MaxAuthorized int
	// AuthAmplification bounds an answer to an authorised source: at most
	// this many times its query's size (in bytes, over as many datagrams
	// as it takes). Default: 10.
	AuthAmplification int
	// MaxChallengeFailures is how many failed challenges a source may make
	// before it is locked out. Default: 5.
	MaxChallengeFailures int
	// ChallengeLockout is how long a source that failed too often is
	// refused challenges, and how long a failure is remembered. Default:
	// 10 minutes.
	ChallengeLockout time.Duration
	// ClientIPv6Prefix is the length, in bits, of the IPv6 prefix that is
	// one source for challenge failures (32 to 128). Default:
	// clientaddr.DefaultIPv6Prefix (64).
	ClientIPv6Prefix int
	// Trusted are the networks whose sources get full answers without
	// padding (still needing challenge/validate for protected commands).
	// Nil: loopback (127.0.0.0/8 and ::1); empty: none.
	Trusted []netip.Prefix
	// MaxDatagram is the largest datagram a response is cut into.
	// Default: 1400.
	MaxDatagram int
	// Now gives the time. Default: time.Now.
	Now func() time.Time
}

// Verdict is what the server did with one query, for metrics.
type Verdict uint8

// Verdicts.
const (
	Answered             Verdict = iota
	AnsweredError                // answered status 40 or 41 for a query that did not decode
	DroppedMalformed             // did not decode, and no error reply fits
	DroppedAmplification         // the answer is larger than the query and the source is not validated
	NumVerdicts
)

var verdictNames = [NumVerdicts]string{"answered", "answered_error", "malformed", "amplification"}

func (v Verdict) String() string {
	if v < NumVerdicts {
		return verdictNames[v]
	}
	return "unknown"
}

type challenge struct {
	src     netip.AddrPort
	expires time.Time
}

// of reports whether the challenge may be validated by src at now.
func (c challenge) of(src netip.AddrPort, now time.Time) bool {
	return c.src == src && now.Before(c.expires)
}

// Cookie parameters: see the package doc.
const (
	cookieEpoch = time.Minute
	cookieBytes = 12 // of HMAC-SHA256, sent in hex: 96 bits
)

// Server answers GQP queries. It is safe for concurrent use.
type Server struct {
	cfg       ServerConfig
	commands  map[string]*Command
	exts      [][]byte
	cookieKey [32]byte

	mu         sync.Mutex
	authorized map[netip.AddrPort]time.Time
	challenges map[string]challenge
	failed     failureTable
	nextPrune  time.Time
}

// Loopback is the default trusted network list.
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// NewServer returns a server; custom commands may not reuse the names of
// the required commands.
func NewServer(cfg ServerConfig) (*Server, error) {
	cfg.AuthTTL = cmp.Or(cfg.AuthTTL, DefaultAuthTTL)
	cfg.ChallengeTTL = cmp.Or(cfg.ChallengeTTL, DefaultChallengeTTL)
	cfg.ChallengeLockout = cmp.Or(cfg.ChallengeLockout, DefaultChallengeLockout)
	cfg.MaxAuthorized = cmp.Or(cfg.MaxAuthorized, DefaultMaxAuthorized)
	cfg.MaxDatagram = cmp.Or(cfg.MaxDatagram, DefaultMaxDatagram)
	cfg.AuthAmplification = cmp.Or(cfg.AuthAmplification, DefaultAuthAmplification)
	cfg.MaxChallengeFailures = cmp.Or(cfg.MaxChallengeFailures, DefaultMaxChallengeFailures)
	if cfg.Trusted == nil {
		cfg.Trusted = Loopback
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.MaxDatagram < 64:
		return nil, errors.New("gqp: max datagram must be at least 64 bytes")
	case cfg.AuthAmplification < 1, cfg.MaxChallengeFailures < 1, cfg.MaxAuthorized < 1,
		cfg.AuthTTL < 0, cfg.ChallengeTTL < 0, cfg.ChallengeLockout < 0:
		return nil, errors.New("gqp: limits must be positive")
	}
	if err := clientaddr.ValidateIPv6Prefix("gqp: client IPv6 prefix", cfg.ClientIPv6Prefix); err != nil {
		return nil, err
	}
	for login, pw := range cfg.Logins {
		if pw == "" {
			return nil, errors.New("gqp: login " + login + " has an empty password")
		}
	}
	s := &Server{
		cfg:        cfg,
		commands:   make(map[string]*Command),
		exts:       [][]byte{[]byte(PadCommand)},
		authorized: make(map[netip.AddrPort]time.Time),
		challenges: make(map[string]challenge),
		failed:     newFailureTable(&cfg),
	}
	_, _ = rand.Read(s.cookieKey[:])
	for i := range cfg.Commands {
		c := &cfg.Commands[i]
		switch c.Name {
		case "identify", "echo", "challenge", "validate", "extensions", PadCommand:
			return nil, errors.New("gqp: command " + c.Name + " is built in")
		case "":
			return nil, errors.New("gqp: a command needs a name")
		}
		if _, dup := s.commands[c.Name]; dup {
			return nil, errors.New("gqp: command " + c.Name + " is defined twice")
		}
		if c.Run == nil && !c.Disabled {
			return nil, errors.New("gqp: command " + c.Name + " has nothing to run")
		}
		s.commands[c.Name] = c
	}
	return s, nil
}

// Authorized reports whether src (address and port) has validated and its
// authorisation has not expired.
func (s *Server) Authorized(src netip.AddrPort) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.authorized[src]
	return ok && s.cfg.Now().Before(exp)
}

// Trusted reports whether addr is in a trusted network.
func (s *Server) Trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range s.cfg.Trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Answer decodes a query from src and returns the datagrams to send back
// (none when the query is dropped). It may block on a command's upstream.
func (s *Server) Answer(ctx context.Context, src netip.AddrPort, query []byte) ([][]byte, Verdict) {
	var q wiregqp.Query
	err := q.Decode(query)
	return s.respond(src, query, &q, err, func(_ int, c wiregqp.Command, r *wiregqp.Reply) {
		s.run(ctx, src, c, r, nil, false)
	})
}

// AnswerNow answers as Answer does when it can without blocking, on the
// socket's reader: built-in commands, static ones, and commands whose
// answer is cached (Command.Cached). When a command of the query needs
// its upstream, AnswerNow runs none of the query's commands (no challenge
// or validate takes effect), lets each such command start its upstream
// work, and returns done false: the caller may then call Answer off its
// reader, or drop the query.
//
// Refusing a cached answer to a source that may not receive it allocates
// nothing (with a Command.Cached that does not).
func (s *Server) AnswerNow(src netip.AddrPort, query []byte) (out [][]byte, v Verdict, done bool) {
	q := queries.Get().(*wiregqp.Query)
	defer queries.Put(q)
	err := q.Decode(query)
	var ready [wiregqp.MaxCommands]func(*wiregqp.Reply) wiregqp.Status
	done = true
	size := 0
	for i, c := range q.Commands {
		if err != nil {
			break
		}
		cmd, _, _ := s.custom(src, c)
		if cmd == nil || cmd.Cached == nil {
			continue
		}
		answer, ok := cmd.Cached(c.Args)
		if !ok {
			done = false // but go on, so that every miss starts its work
			continue
		}
		ready[i] = answer.Fill
		size += answer.Size
	}
	if !done {
		return nil, 0, false
	}
	if size > len(query) && !s.Trusted(src.Addr()) && !s.Authorized(src) && !s.validates(src, q.Commands) {
		// An unvalidated source gets no more bytes than it sent, so this
		// answer could only be dropped: it is not built (a cached answer
		// can be tens of kilobytes, and these sources can be forged).
		return nil, DroppedAmplification, true
	}
	out, v = s.respond(src, query, q, err, func(i int, c wiregqp.Command, r *wiregqp.Reply) {
		s.run(context.Background(), src, c, r, ready[i], true)
	})
	return out, v, true
}

// validates reports whether one of commands is a validate that will
// authorise src: its challenge is pending, live and bound to src's address
// and port. Only such a validate lets AnswerNow build an answer larger than
// the query for an unauthorised source, which then gets it as an
// authorised one; a validate of anything else (any forged query can carry
// one) fails, so that answer could only be dropped.
func (s *Server) validates(src netip.AddrPort, commands []wiregqp.Command) bool {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range commands {
		if string(c.Name) != "validate" || len(c.Args) == 0 {
			continue
		}
		if ch, ok := s.challenges[string(c.Args[0])]; ok && ch.of(src, now) {
			return true
		}
	}
	return false
}

// queries are the decoded queries AnswerNow reuses: decoding into one
// allocates nothing once its slices have grown.
var queries = sync.Pool{New: func() any { return new(wiregqp.Query) }}

// respond answers q, decoded from query with decodeErr, running each of
// its commands with run, and applies the amplification limits of src.
func (s *Server) respond(src netip.AddrPort, query []byte, q *wiregqp.Query, decodeErr error, run func(int, wiregqp.Command, *wiregqp.Reply)) ([][]byte, Verdict) {
	var resp wiregqp.Response
	verdict := Answered
	if decodeErr != nil {
		status := wiregqp.StatusDecodeError
		if errors.Is(decodeErr, wiregqp.ErrUnsupportedEncoding) {
			status = wiregqp.StatusUnsupportedEncoding
		}
		resp.Add(status, nil)
		verdict = AnsweredError
	} else {
		for i, c := range q.Commands {
			run(i, c, resp.Add(wiregqp.StatusOK, c.Name))
		}
	}
	out, err := resp.AppendTo(nil)
	if err != nil {
		// A custom command produced a reply the codec refuses (a byte that
		// would break framing, too many records): that reply alone becomes
		// 31.
		for i := range resp.Replies {
			var one wiregqp.Response
			r := &resp.Replies[i]
			one.Replies = append(one.Replies, *r)
			if _, err := one.AppendTo(nil); err != nil {
				r.Status = wiregqp.StatusUnavailable
				r.Records = r.Records[:0]
				r.SetText([]byte("reply could not be encoded"))
			}
		}
		if out, err = resp.AppendTo(nil); err != nil {
			return nil, DroppedMalformed
		}
	}
	switch {
	case s.Trusted(src.Addr()):
		return split(out, s.cfg.MaxDatagram), verdict
	case s.Authorized(src):
		limit := len(query) * s.cfg.AuthAmplification
		if len(out) <= limit {
			return split(out, s.cfg.MaxDatagram), verdict
		}
		// Say why in a short answer, if even that fits.
		if short := tooLarge(&resp); len(short) <= limit {
			return [][]byte{short}, verdict
		}
	case len(out) <= len(query):
		// Never more than the query held, in bytes or datagrams.
		return [][]byte{out}, verdict
	}
	if verdict == AnsweredError {
		return nil, DroppedMalformed
	}
	return nil, DroppedAmplification
}

// tooLarge is resp with every reply replaced by status 31 and a hint.
func tooLarge(resp *wiregqp.Response) []byte {
	var short wiregqp.Response
	for i := range resp.Replies {
		short.Add(wiregqp.StatusUnavailable, resp.Replies[i].Name).SetText([]byte("answer too large: pad the query"))
	}
	out, _ := short.AppendTo(nil)
	return out
}

// split cuts a response into datagrams; the client joins them until EOT.
func split(b []byte, size int) [][]byte {
	var out [][]byte
	for len(b) > size {
		out = append(out, b[:size:size])
		b = b[size:]
	}
	return append(out, b)
}

// run answers command c of src into r. answer, if set, is the command's
// answer prepared by AnswerNow; now says run may not block (AnswerNow).
func (s *Server) run(ctx context.Context, src netip.AddrPort, c wiregqp.Command, r *wiregqp.Reply, answer func(*wiregqp.Reply) wiregqp.Status, now bool) {
	switch string(c.Name) {
	case "identify":
		id := s.cfg.Identity
		r.AddPair([]byte("gamename"), []byte(id.GameName))
		r.AddPair([]byte("gamever"), []byte(id.GameVer))
		r.AddPair([]byte("netver"), []byte(id.NetVer))
	case "echo":
		// One argument comes back as text, as the protocol's example shows;
		// several come back as one string record each.
		switch len(c.Args) {
		case 0:
		case 1:
			r.SetText(c.Args[0])
		default:
			for _, a := range c.Args {
				r.AddString(a)
			}
		}
	case "challenge":
		s.authStep(src, c.Args, r, 2, "challenge takes a login and a password", s.challenge)
	case "validate":
		s.authStep(src, c.Args, r, 1, "validate takes the challenge string", s.validate)
	case "extensions":
		r.AddList(s.exts...)
	case PadCommand:
	default:
		cmd, status, why := s.custom(src, c)
		switch {
		case cmd == nil:
			r.Status = status
			r.SetText([]byte(why))
		case answer != nil:
			r.Status = answer(r)
		case now && cmd.Cached != nil:
			// A protected command that a validate earlier in this query
			// authorised: AnswerNow did not prepare it, and its Run may
			// block. Its answer if it is ready; otherwise the client asks
			// again, authorised.
			if a, ok := cmd.Cached(c.Args); ok {
				r.Status = a.Fill(r)
			} else {
				r.Status = wiregqp.StatusUnavailable
				r.SetText([]byte("try again shortly"))
			}
		default:
			r.Status = cmd.Run(ctx, c.Args, r)
		}
	}
}

// custom returns the custom command c names if src may run it now, or
// the status and text of the refusal.
func (s *Server) custom(src netip.AddrPort, c wiregqp.Command) (*Command, wiregqp.Status, string) {
	cmd, ok := s.commands[string(c.Name)]
	switch {
	case !ok:
		return nil, wiregqp.StatusUnknownCommand, "unknown command"
	case cmd.Disabled:
		return nil, wiregqp.StatusDisabled, "command disabled"
	case cmd.Protected && !s.Authorized(src):
		return nil, wiregqp.StatusUnauthorised, "not authorised: use challenge and validate first"
	case len(c.Args) < cmd.MinArgs:
		return nil, wiregqp.StatusWrongArgCount, "too few arguments"
	}
	return cmd, 0, ""
}

// cookie is the cookie of src in epoch (see the package doc), in hex.
func (s *Server) cookie(src netip.AddrPort, epoch int64) []byte {
	var msg [8 + 16 + 2]byte
	binary.BigEndian.PutUint64(msg[:8], uint64(epoch))
	a := src.Addr().Unmap().As16()
	copy(msg[8:24], a[:])
	binary.BigEndian.PutUint16(msg[24:], src.Port())
	mac := hmac.New(sha256.New, s.cookieKey[:])
	mac.Write(msg[:])
	return hex.AppendEncode(nil, mac.Sum(nil)[:cookieBytes])
}

// cookieValid reports whether c is src's cookie of this epoch or the
// previous one.
func (s *Server) cookieValid(src netip.AddrPort, c []byte, now time.Time) bool {
	if len(c) != 2*cookieBytes {
		return false
	}
	epoch := now.UnixNano() / int64(cookieEpoch)
	return hmac.Equal(c, s.cookie(src, epoch)) || hmac.Equal(c, s.cookie(src, epoch-1))
}

// authStep runs step, challenge or validate, with the time if args has the
// minArgs arguments it takes; otherwise it answers usage with WrongArgCount.
func (s *Server) authStep(src netip.AddrPort, args [][]byte, r *wiregqp.Reply, minArgs int, usage string,
	step func(src netip.AddrPort, args [][]byte, now time.Time, r *wiregqp.Reply)) {
	if len(args) < minArgs {
		r.Status = wiregqp.StatusWrongArgCount
		r.SetText([]byte(usage))
		return
	}
	step(src, args, s.cfg.Now(), r)
}

// challenge checks the login and password in args[0:2] (and the cookie in
// args[2] of an untrusted source) and answers a challenge string for
// validate.
func (s *Server) challenge(src netip.AddrPort, args [][]byte, now time.Time, r *wiregqp.Reply) {
	trusted := s.Trusted(src.Addr())
	// Until the source proves it receives at its address and port, nothing
	// is checked or counted: it gets its cookie.
	if !trusted && (len(args) < 3 || !s.cookieValid(src, args[2], now)) {
		r.Status = wiregqp.StatusUnauthorised
		r.AddPair([]byte("cookie"), s.cookie(src, now.UnixNano()/int64(cookieEpoch)))
		return
	}
	key := clientaddr.Key(src.Addr(), s.cfg.ClientIPv6Prefix)
	s.mu.Lock()
	s.pruneEvery(now)
	refused := s.failed.check(key, trusted, now)
	s.mu.Unlock()
	switch refused {
	case lockedOut:
		r.Status = wiregqp.StatusUnauthorised
		r.SetText([]byte("too many failed attempts; try again later"))
		return
	case tableFull:
		r.Status = wiregqp.StatusUnavailable
		r.SetText([]byte("too many failing sources; try again later"))
		return
	case networkFull:
		r.Status = wiregqp.StatusUnavailable
		r.SetText([]byte("too many failing sources in this network; try again later"))
		return
	}
	want, ok := s.cfg.Logins[string(args[0])]
	// Compare digests, for an unknown login too, so timing tells neither
	// the password nor its length.
	wantSum, gotSum := sha256.Sum256([]byte(want)), sha256.Sum256(args[1])
	match := subtle.ConstantTimeCompare(wantSum[:], gotSum[:]) == 1
	if !ok || !match {
		s.mu.Lock()
		s.failed.fail(key, trusted, now)
		s.mu.Unlock()
		r.Status = wiregqp.StatusUnauthorised
		r.SetText([]byte("invalid credentials"))
		return
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	s.mu.Lock()
	if len(s.challenges) >= s.cfg.MaxAuthorized {
		s.mu.Unlock()
		r.Status = wiregqp.StatusUnavailable
		r.SetText([]byte("too many pending challenges"))
		return
	}
	s.challenges[token] = challenge{src: src, expires: now.Add(s.cfg.ChallengeTTL)}
	s.mu.Unlock()
	r.AddString([]byte(token))
}

// validate authorises src if args[0] is a challenge string it was given.
func (s *Server) validate(src netip.AddrPort, args [][]byte, now time.Time, r *wiregqp.Reply) {
	s.mu.Lock()
	s.pruneEvery(now)
	c, ok := s.challenges[string(args[0])]
	if !ok || !c.of(src, now) {
		s.mu.Unlock()
		r.Status = wiregqp.StatusUnauthorised
		r.SetText([]byte("unknown or expired challenge"))
		return
	}
	delete(s.challenges, string(args[0]))
	if _, had := s.authorized[src]; !had && len(s.authorized) >= s.cfg.MaxAuthorized {
		s.mu.Unlock()
		r.Status = wiregqp.StatusUnavailable
		r.SetText([]byte("too many authorised clients"))
		return
	}
	s.authorized[src] = now.Add(s.cfg.AuthTTL)
	s.mu.Unlock()
}

// pruneEvery prunes at most once a second, so a flood of challenges does
// not walk the tables for each. The caller holds mu.
func (s *Server) pruneEvery(now time.Time) {
	if now.Before(s.nextPrune) {
		return
	}
	s.nextPrune = now.Add(time.Second)
	s.prune(now)
}

// prune forgets expired challenges, authorisations and failures. The
// caller holds mu.
func (s *Server) prune(now time.Time) {
	for k, c := range s.challenges {
		if !now.Before(c.expires) {
			delete(s.challenges, k)
		}
	}
	for k, exp := range s.authorized {
		if !now.Before(exp) {
			delete(s.authorized, k)
		}
	}
	s.failed.prune(now)
}
