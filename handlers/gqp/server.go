// Package gqp is gamegate's GQP (Gameserver Query Protocol) service, free of
// Caddy: a server that answers the required commands (identify, echo,
// challenge, validate, extensions) and registered custom commands, and a
// client that queries game servers with timeouts, retries and bounded
// multi-datagram responses.
//
// Amplification: a GQP answer is usually larger than its query, so a public
// responder could be used to flood a spoofed address. The server therefore
// never sends a source more bytes than its query held unless the source has
// proven its address with challenge/validate. Clients get full answers by
// padding their queries with the "pad" extension command (its argument is
// ignored and its reply is empty), which the Client does by default.
package gqp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/netip"
	"sync"
	"time"

	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// Identity is what the identify command returns.
type Identity struct {
	GameName string // gamename: the game's tag
	GameVer  string // gamever: the game's version
	NetVer   string // netver: the oldest network version it plays with
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
	// returns its status. It may block (for example on an upstream): the
	// caller runs Answer off the socket's read loop.
	Run func(ctx context.Context, args [][]byte, reply *wiregqp.Reply) wiregqp.Status
}

// PadCommand is the extension command whose argument is ignored and whose
// reply is empty, so a client can make its query as large as the answer it
// expects (see the package doc on amplification).
const PadCommand = "pad"

// ServerConfig is the behaviour of a Server.
type ServerConfig struct {
	Identity Identity
	Commands []Command
	// Logins maps login names to passwords for challenge.
	Logins map[string]string
	// AuthTTL is how long validate authorises a source address. Default:
	// 10 minutes.
	AuthTTL time.Duration
	// ChallengeTTL is how long a challenge string may be validated.
	// Default: 1 minute.
	ChallengeTTL time.Duration
	// MaxAuthorized bounds the authorised addresses and the pending
	// challenges remembered. Default: 10000.
	MaxAuthorized int
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
	addr    netip.Addr
	expires time.Time
}

// Server answers GQP queries. It is safe for concurrent use.
type Server struct {
	cfg      ServerConfig
	commands map[string]*Command
	exts     [][]byte

	mu         sync.Mutex
	authorized map[netip.Addr]time.Time
	challenges map[string]challenge
}

// NewServer returns a server; custom commands may not reuse the names of
// the required commands.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.AuthTTL == 0 {
		cfg.AuthTTL = 10 * time.Minute
	}
	if cfg.ChallengeTTL == 0 {
		cfg.ChallengeTTL = time.Minute
	}
	if cfg.MaxAuthorized == 0 {
		cfg.MaxAuthorized = 10000
	}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = 1400
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxDatagram < 64 {
		return nil, errors.New("gqp: max datagram must be at least 64 bytes")
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
		authorized: make(map[netip.Addr]time.Time),
		challenges: make(map[string]challenge),
	}
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

// Authorized reports whether addr has validated and its authorisation has
// not expired.
func (s *Server) Authorized(addr netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.authorized[addr]
	return ok && s.cfg.Now().Before(exp)
}

// Answer decodes a query from src and returns the datagrams to send back
// (none when the query is dropped).
func (s *Server) Answer(ctx context.Context, src netip.AddrPort, query []byte) ([][]byte, Verdict) {
	var q wiregqp.Query
	var resp wiregqp.Response
	verdict := Answered
	if err := q.Decode(query); err != nil {
		status := wiregqp.StatusDecodeError
		if errors.Is(err, wiregqp.ErrUnsupportedEncoding) {
			status = wiregqp.StatusUnsupportedEncoding
		}
		resp.Add(status, nil)
		verdict = AnsweredError
	} else {
		for _, c := range q.Commands {
			s.run(ctx, src.Addr(), c, resp.Add(wiregqp.StatusOK, c.Name))
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
	if !s.Authorized(src.Addr()) {
		// Never more than the query held, in bytes or datagrams.
		if len(out) > len(query) {
			if verdict == AnsweredError {
				return nil, DroppedMalformed
			}
			return nil, DroppedAmplification
		}
		return [][]byte{out}, verdict
	}
	return split(out, s.cfg.MaxDatagram), verdict
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

func (s *Server) run(ctx context.Context, src netip.Addr, c wiregqp.Command, r *wiregqp.Reply) {
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
		s.challenge(src, c.Args, r)
	case "validate":
		s.validate(src, c.Args, r)
	case "extensions":
		r.AddList(s.exts...)
	case PadCommand:
	default:
		cmd, ok := s.commands[string(c.Name)]
		switch {
		case !ok:
			r.Status = wiregqp.StatusUnknownCommand
			r.SetText([]byte("unknown command"))
		case cmd.Disabled:
			r.Status = wiregqp.StatusDisabled
			r.SetText([]byte("command disabled"))
		case cmd.Protected && !s.Authorized(src):
			r.Status = wiregqp.StatusUnauthorised
			r.SetText([]byte("not authorised: use challenge and validate first"))
		case len(c.Args) < cmd.MinArgs:
			r.Status = wiregqp.StatusWrongArgCount
			r.SetText([]byte("too few arguments"))
		default:
			r.Status = cmd.Run(ctx, c.Args, r)
		}
	}
}

func (s *Server) challenge(src netip.Addr, args [][]byte, r *wiregqp.Reply) {
	if len(args) < 2 {
		r.Status = wiregqp.StatusWrongArgCount
		r.SetText([]byte("challenge takes a login and a password"))
		return
	}
	want, ok := s.cfg.Logins[string(args[0])]
	// Compare even for an unknown login, so timing tells nothing.
	match := subtle.ConstantTimeCompare([]byte(want), args[1]) == 1
	if !ok || !match {
		r.Status = wiregqp.StatusUnauthorised
		r.SetText([]byte("invalid credentials"))
		return
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	now := s.cfg.Now()
	s.mu.Lock()
	s.prune(now)
	if len(s.challenges) >= s.cfg.MaxAuthorized {
		s.mu.Unlock()
		r.Status = wiregqp.StatusUnavailable
		r.SetText([]byte("too many pending challenges"))
		return
	}
	s.challenges[token] = challenge{addr: src, expires: now.Add(s.cfg.ChallengeTTL)}
	s.mu.Unlock()
	r.AddString([]byte(token))
}

func (s *Server) validate(src netip.Addr, args [][]byte, r *wiregqp.Reply) {
	if len(args) < 1 {
		r.Status = wiregqp.StatusWrongArgCount
		r.SetText([]byte("validate takes the challenge string"))
		return
	}
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(now)
	c, ok := s.challenges[string(args[0])]
	if !ok || c.addr != src || !now.Before(c.expires) {
		r.Status = wiregqp.StatusUnauthorised
		r.SetText([]byte("unknown or expired challenge"))
		return
	}
	delete(s.challenges, string(args[0]))
	if _, had := s.authorized[src]; !had && len(s.authorized) >= s.cfg.MaxAuthorized {
		r.Status = wiregqp.StatusUnavailable
		r.SetText([]byte("too many authorised clients"))
		return
	}
	s.authorized[src] = now.Add(s.cfg.AuthTTL)
}

// prune forgets expired challenges and authorisations. The caller holds mu.
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
}
