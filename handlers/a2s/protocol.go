package a2s

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// Defaults of ShieldOptions, and the bounds Validate checks. Every wait
// derived from them (attempts × attempt_timeout and a second) is far from
// time.Duration's limit.
const (
	DefaultTTL                  = 5 * time.Second
	DefaultStaleWhileRevalidate = 30 * time.Second
	DefaultStaleIfError         = 30 * time.Second
	DefaultNegativeTTL          = time.Second
	DefaultChallengeWindow      = 30 * time.Second
	DefaultAttemptTimeout       = time.Second
	DefaultRetries              = 1

	// MinTTL bounds ttl from below: under it, every request is a query of
	// the game server the shield protects.
	MinTTL = 100 * time.Millisecond
	// MaxLifetime bounds ttl, stale_while_revalidate, stale_if_error and
	// negative_ttl.
	MaxLifetime = 24 * time.Hour
	// A challenge window under a second ends before a client's answer
	// arrives.
	MinChallengeWindow = time.Second
	MaxChallengeWindow = time.Hour
	MinMaxPayload      = 200
	MaxAttemptTimeout  = time.Hour
	MaxRetries         = 10
	MinMaxPackets      = 2
	MinMaxResponse     = 1400
	MaxMaxResponse     = 1 << 20
	// MaxByteRate bounds byte_rate, byte_burst, total_byte_rate and
	// total_byte_burst.
	MaxByteRate = 1 << 30
	// MaxMaxSources bounds the table of sources (1<<20 takes 34 MB).
	MaxMaxSources = 1 << 20
)

// The shield's workers: validated requests that wait for the game server
// (nothing cached yet) are served by ShieldWorkers goroutines, with at
// most ShieldQueue waiting for them, from all sources.
const (
	ShieldWorkers = 2
	ShieldQueue   = 64
)

// ShieldOptions configure a ShieldProtocol: the A2S shield's options. Zero
// values mean the defaults. The names in Validate's errors are the
// options' (JSON and Caddyfile).
type ShieldOptions struct {
	// The game server's query address, host:port. Required.
	Upstream string `json:"upstream,omitempty"`
	// How long an answer is reused, from 100ms to 24h. Default: 5s.
	TTL duration.Duration `json:"ttl,omitempty"`
	// How long after ttl an answer is still served while it is refreshed
	// (RFC 5861), at most 24h. Default: 30s.
	StaleWhileRevalidate duration.Duration `json:"stale_while_revalidate,omitempty"`
	// How long after ttl an answer is still served when the game server
	// does not answer (RFC 5861), at most 24h. Default: 30s.
	StaleIfError duration.Duration `json:"stale_if_error,omitempty"`
	// How long a failed upstream query is remembered before the next try.
	// At most 24h. Default: 1s.
	NegativeTTL duration.Duration `json:"negative_ttl,omitempty"`
	// How long a challenge stays valid: between one and two windows. From
	// 1s to 1h. Default: 30s.
	ChallengeWindow duration.Duration `json:"challenge_window,omitempty"`
	// Fragment payload of split answers, in bytes (Source servers use
	// 1248). Default: 1248.
	MaxPayload int `json:"max_payload,omitempty"`
	// Serve answers the game server compressed uncompressed. Default:
	// false (served compressed, as they came).
	Decompress bool `json:"decompress,omitempty"`
	// Layout of split answers sent: auto (the game server's own), source,
	// source_no_size or goldsrc. It is also the layout expected from the
	// game server. Default: auto.
	SplitLayout string `json:"split_layout,omitempty"`
	// Time one upstream attempt waits, challenge included, at most 1h.
	// Default: 1s.
	AttemptTimeout duration.Duration `json:"attempt_timeout,omitempty"`
	// Upstream attempts after the first, -1 (none) to 10. Default: 1.
	Retries int `json:"retries,omitempty"`
	// Most fragments an upstream answer may have. Default: 64.
	MaxPackets int `json:"max_packets,omitempty"`
	// Largest upstream answer accepted, in bytes. Default: 131072.
	MaxResponse int `json:"max_response_size,omitempty"`
	// The answers sent, per source and in all: rate, burst, byte_rate,
	// byte_burst, total_byte_rate, total_byte_burst, max_sources.
	Limits
	// Key is the challenges' secret. Default: random.
	Key []byte `json:"-"`

	// Count receives what the shield did with each request (metrics); an
	// answer sent is Answered, with Sent its bytes. Default: none.
	Count func(Verdict)   `json:"-"`
	Sent  func(bytes int) `json:"-"`
	// Busy is called for a validated request dropped because the queue of
	// requests waiting for the game server was full. Default: none.
	Busy func() `json:"-"`
	// OnUpstream is called for every upstream query. Default: none.
	OnUpstream func() `json:"-"`
	// WriteFailed is told that an answer datagram to to could not be sent.
	// Default: none.
	WriteFailed func(to netip.AddrPort, err error) `json:"-"`
}

// Validate checks every option; zero values (the defaults) pass, but for
// Upstream, which is required.
func (o *ShieldOptions) Validate() error {
	var c bounds.Check
	if _, ok := ParseLayout(o.SplitLayout); !ok {
		c.Add(fmt.Errorf("split_layout: want %s, got %q", LayoutChoices(), o.SplitLayout))
	}
	c.Duration("ttl", o.TTL.Std(), MinTTL, MaxLifetime)
	c.Duration("stale_while_revalidate", o.StaleWhileRevalidate.Std(), 0, MaxLifetime)
	c.Duration("stale_if_error", o.StaleIfError.Std(), 0, MaxLifetime)
	c.Duration("negative_ttl", o.NegativeTTL.Std(), 0, MaxLifetime)
	c.Duration("challenge_window", o.ChallengeWindow.Std(), MinChallengeWindow, MaxChallengeWindow)
	c.Int("max_payload", o.MaxPayload, MinMaxPayload, MaxSingle)
	l := o.Limits
	c.Add(ratelimit.ValidateOptions("rate", "burst", l.Rate, l.Burst, ratelimit.MaxBurst))
	c.Int("byte_rate", l.ByteRate, 1, MaxByteRate)
	c.Int("byte_burst", l.ByteBurst, 1, MaxByteRate)
	c.Int("total_byte_rate", l.TotalByteRate, 1, MaxByteRate)
	c.Int("total_byte_burst", l.TotalByteBurst, 1, MaxByteRate)
	c.Int("max_sources", l.MaxSources, 1, MaxMaxSources)
	c.Add(ValidateClient("attempt_timeout", o.AttemptTimeout.Std(), o.Retries, o.MaxPackets, o.MaxResponse))
	// The upstream last: an option's range is the first error of options
	// without one (a Caddyfile parser reads the range from it).
	if o.Upstream == "" {
		c.Failf("upstream is required")
	} else if _, _, err := net.SplitHostPort(o.Upstream); err != nil {
		c.Failf("upstream %q is not host:port", o.Upstream)
	}
	return c.Err()
}

// ValidateClient checks the options of a Client, its timeout option named
// timeoutName: the A2S shield's upstream and game_query's a2s protocol.
// With at most MaxRetries+1 attempts of at most MaxAttemptTimeout, every
// wait derived from them is well defined.
func ValidateClient(timeoutName string, timeout time.Duration, retries, maxPackets, maxResponse int) error {
	var retriesErr error // -1 is no retries: not an optional count
	if retries < -1 || retries > MaxRetries {
		retriesErr = &bounds.RangeError{Name: "retries", Lo: -1, Hi: MaxRetries, Value: int64(retries)}
	}
	return bounds.First(
		bounds.Duration(timeoutName, timeout, 0, MaxAttemptTimeout),
		retriesErr,
		bounds.Int("max_packets", maxPackets, MinMaxPackets, wirea2s.MaxSourcePackets),
		bounds.Int("max_response_size", maxResponse, MinMaxResponse, MaxMaxResponse),
	)
}

// ShieldProtocol serves a Shield as a dgram.Protocol. Each datagram is
// answered on the reader that read it: a challenge, or the cached answer.
// Only a request from a source that passed its challenge while nothing is
// cached yet waits for the game server, in a bounded queue served by a few
// workers; a request that finds the queue full is dropped (Busy) and the
// client asks again. Nothing is kept per source but its answer limits, in
// a table of fixed size: a flood from many (spoofed) sources costs no
// goroutine and no memory.
type ShieldProtocol struct {
	opts    ShieldOptions
	shield  *Shield
	loadBy  time.Duration // how long an answer may be waited for
	workers dgram.Workers[shieldJob]
}

// shieldJob is a validated request waiting for the game server's answer.
type shieldJob struct {
	conn *dgram.Conn
	src  netip.AddrPort
	typ  wirea2s.Type
}

// NewShieldProtocol builds the shield for o, which Validate must accept,
// and starts its workers; Close stops them.
func NewShieldProtocol(o ShieldOptions) (*ShieldProtocol, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ttl := cmp.Or(o.TTL.Std(), DefaultTTL)
	staleWhileRevalidate := cmp.Or(o.StaleWhileRevalidate.Std(), DefaultStaleWhileRevalidate)
	staleIfError := cmp.Or(o.StaleIfError.Std(), DefaultStaleIfError)
	negativeTTL := cmp.Or(o.NegativeTTL.Std(), DefaultNegativeTTL)
	challengeWindow := cmp.Or(o.ChallengeWindow.Std(), DefaultChallengeWindow)
	attemptTimeout := cmp.Or(o.AttemptTimeout.Std(), DefaultAttemptTimeout)
	o.Retries = cmp.Or(o.Retries, DefaultRetries)
	layout, _ := ParseLayout(o.SplitLayout) // checked by Validate
	// One upstream query: every attempt, and a second.
	loadBy := time.Duration(max(0, o.Retries)+1)*attemptTimeout + time.Second
	shield, err := NewShield(ShieldConfig{
		Upstream: o.Upstream,
		Client: &Client{Timeout: attemptTimeout, Retries: o.Retries, Layout: layout,
			MaxPackets: o.MaxPackets, MaxMessage: o.MaxResponse},
		Cache: cache.Policy{TTL: ttl, StaleWhileRevalidate: staleWhileRevalidate, StaleIfError: staleIfError,
			NegativeTTL: negativeTTL, LoadTimeout: loadBy},
		ChallengeWindow: challengeWindow,
		Key:             o.Key,
		Layout:          layout,
		MaxPayload:      o.MaxPayload,
		Decompress:      o.Decompress,
		Limits:          o.Limits,
		OnUpstream:      o.OnUpstream,
	})
	if err != nil {
		return nil, err
	}
	p := &ShieldProtocol{opts: o, shield: shield, loadBy: loadBy}
	p.workers.Start(ShieldWorkers, ShieldQueue, p.serve, func(shieldJob) { p.count(DroppedNoAnswer) })
	return p, nil
}

// Shield returns the shield the protocol serves.
func (p *ShieldProtocol) Shield() *Shield { return p.shield }

// Close stops the workers, then ends the upstream queries: requests
// waiting for the game server are dropped (DroppedNoAnswer), so a
// configuration reload or stop does not wait for it, and the upstream
// queries end with the configuration. In that order, so that no worker
// takes a query's end for an answer.
func (p *ShieldProtocol) Close() {
	p.workers.Close()
	p.shield.Close()
}

// Match reports whether the datagram looks like an A2S request (wire/a2s's
// LooksLikeRequest).
func (p *ShieldProtocol) Match(datagram []byte) bool { return wirea2s.LooksLikeRequest(datagram) }

// ServeDatagram answers one request: a challenge, the cached answer, or,
// when nothing is cached yet, a place in the workers' queue.
func (p *ShieldProtocol) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	out, typ, serve, v := p.shield.Classify(src, datagram, w.Buffer(wirea2s.ChallengeLen))
	if !serve {
		p.count(v)
		if len(out) > 0 {
			w.WriteTo(out, src)
		}
		return
	}
	ds, pending := p.shield.ServeCached(typ)
	switch {
	case ds != nil:
		if p.admit(src, ds) {
			for _, d := range ds {
				w.WriteTo(d, src)
			}
		}
	case !pending:
		p.count(DroppedNoAnswer)
	default:
		if !p.workers.Offer(shieldJob{conn: w.Conn(), src: src, typ: typ}) && p.opts.Busy != nil {
			p.opts.Busy()
		}
	}
}

// serve waits, at most loadBy, for the answer to a queued request.
func (p *ShieldProtocol) serve(ctx context.Context, j shieldJob) {
	ctx, cancel := context.WithTimeout(ctx, p.loadBy)
	ds := p.shield.Serve(ctx, j.typ)
	cancel()
	if ds == nil {
		p.count(DroppedNoAnswer)
		return
	}
	if !p.admit(j.src, ds) {
		return
	}
	for _, d := range ds {
		if err := j.conn.WriteTo(d, j.src); err != nil && p.opts.WriteFailed != nil {
			p.opts.WriteFailed(j.src, err)
		}
	}
}

// admit applies src's answer limits to ds, and counts the outcome.
func (p *ShieldProtocol) admit(src netip.AddrPort, ds [][]byte) bool {
	v := p.shield.Admit(src, ds)
	p.count(v)
	if v != Answered {
		return false
	}
	if p.opts.Sent != nil {
		n := 0
		for _, d := range ds {
			n += len(d)
		}
		p.opts.Sent(n)
	}
	return true
}

func (p *ShieldProtocol) count(v Verdict) {
	if p.opts.Count != nil {
		p.opts.Count(v)
	}
}

var _ dgram.Protocol = (*ShieldProtocol)(nil)
