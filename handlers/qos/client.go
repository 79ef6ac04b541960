package qos

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	wireqos "github.com/gamegate/gamegate/wire/qos"
)

// Target is one region's QoS server, as discovery lists it: several regions
// may name the same server.
type Target struct {
	Region     string
	LocationID int
	Addr       netip.AddrPort
}

// CheckConfig is how a Checker runs a QoS check.
type CheckConfig struct {
	// Title is the game title sent in each request. Default: "QoS request".
	Title string
	// Requests is the number of requests sent to each server, in a burst.
	// Default: 10; the protocol recommends 10 to 20.
	Requests int
	// Wait is how long to wait for responses after the last request is sent.
	// Default: 1s.
	Wait time.Duration
	// PacketSize pads each request to this many bytes, to prefer routes that
	// carry game-sized datagrams. Default: no padding. At most 1500.
	PacketSize int
	// Margin is added to a back-off or ban before the server is contacted
	// again. Default: 30s.
	Margin time.Duration
	// Local is the local address to send from. Default: any.
	Local string
	// ProbeKey, when set, signs every request as a health probe (see
	// probe.go), which engines holding the same key answer whatever the
	// state of the source address. Default: none.
	ProbeKey []byte
	// Now returns the current time. Default: time.Now.
	Now func() time.Time
}

// Defaults of CheckConfig.
const (
	DefaultCheckTitle    = "QoS request"
	DefaultCheckRequests = 10
	DefaultCheckWait     = time.Second
	DefaultCheckMargin   = 30 * time.Second
)

// WithDefaults returns c with every zero field set to its default.
func (c CheckConfig) WithDefaults() CheckConfig {
	c.Title = cmp.Or(c.Title, DefaultCheckTitle)
	c.Requests = cmp.Or(c.Requests, DefaultCheckRequests)
	c.Wait = cmp.Or(c.Wait, DefaultCheckWait)
	c.Margin = cmp.Or(c.Margin, DefaultCheckMargin)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ServerResult is the outcome of checking one QoS server.
type ServerResult struct {
	Addr    netip.AddrPort
	Regions []string
	// Sent and Received count requests and distinct valid responses.
	Sent, Received int
	// Duplicates and Stale count responses discarded: a sequence already
	// seen, or an identifier from another check.
	Duplicates, Stale int
	// Latencies are the round-trip times of the received responses, sorted.
	Latencies []time.Duration
	// Flow is the strongest flow control the server sent (a ban over a
	// back-off over none).
	Flow wireqos.FlowControl
	// SkippedUntil is set when the server was not contacted because of
	// earlier flow control, or when this check's flow control asks to stay
	// away until then.
	SkippedUntil time.Time
	Skipped      bool
	Err          error
}

// Loss is the fraction of requests that got no response.
func (r *ServerResult) Loss() float64 {
	if r.Sent == 0 {
		return 0
	}
	return 1 - float64(r.Received)/float64(r.Sent)
}

// Percentile returns the p-th percentile (0-100) round-trip time by nearest
// rank, or 0 without responses.
func (r *ServerResult) Percentile(p float64) time.Duration {
	n := len(r.Latencies)
	if n == 0 {
		return 0
	}
	rank := int(float64(n)*p/100+0.999999) - 1
	return r.Latencies[min(max(rank, 0), n-1)]
}

// Checker runs QoS checks. It remembers the flow control servers sent and
// skips a server until its back-off or ban (plus a margin) has passed. It is
// safe for concurrent use, but checks sharing a Checker run one at a time.
type Checker struct {
	cfg    CheckConfig
	prober *prober // nil: requests are not signed
	mu     sync.Mutex
	skip   map[netip.AddrPort]time.Time
}

// NewChecker returns a Checker with cfg's defaults filled in.
func NewChecker(cfg CheckConfig) (*Checker, error) {
	cfg = cfg.WithDefaults()
	switch {
	case cfg.Requests < 1 || cfg.Requests > 256:
		return nil, errors.New("requests per server must be in [1, 256]: the sequence number is one byte")
	case len(cfg.Title) > wireqos.MaxTitle:
		return nil, fmt.Errorf("title longer than %d bytes", wireqos.MaxTitle)
	case cfg.PacketSize > wireqos.MaxPacket:
		return nil, fmt.Errorf("packet size over %d bytes", wireqos.MaxPacket)
	}
	c := &Checker{cfg: cfg, skip: make(map[netip.AddrPort]time.Time)}
	if len(cfg.ProbeKey) > 0 {
		c.prober = newProber(cfg.ProbeKey)
	}
	return c, nil
}

// The custom data this client sends: sequence u8, identifier u16 LE (random
// per server and per check, so responses from an earlier check are told
// apart), and the send time as u64 LE nanoseconds since the check began. The
// layout matches the one the Unity client uses, with a finer clock.
const customLen = 1 + 2 + 8

type serverState struct {
	res  *ServerResult
	id   uint16
	seen [256]bool
}

// Check contacts every distinct server among targets once, sends a burst of
// requests to each, and collects responses until all have arrived, Wait has
// passed since the last send, or ctx ends. Results are per server, in the
// order servers first appear in targets.
func (c *Checker) Check(ctx context.Context, targets []Target) ([]*ServerResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	var order []netip.AddrPort
	byAddr := make(map[netip.AddrPort]*serverState)
	for _, t := range targets {
		addr := netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
		st, ok := byAddr[addr]
		if !ok {
			st = &serverState{res: &ServerResult{Addr: addr}, id: uint16(rand.Uint32())}
			byAddr[addr] = st
			order = append(order, addr)
		}
		if !slices.Contains(st.res.Regions, t.Region) {
			st.res.Regions = append(st.res.Regions, t.Region)
		}
	}
	results := make([]*ServerResult, len(order))
	for i, a := range order {
		results[i] = byAddr[a].res
	}

	conn, err := net.ListenPacket("udp", c.localAddr())
	if err != nil {
		return results, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	start := c.cfg.Now()
	// Decide which servers are contacted before sending, so the reader
	// knows how many responses to expect.
	var contacted []netip.AddrPort
	for _, addr := range order {
		st := byAddr[addr]
		if until, ok := c.skip[addr]; ok {
			if start.Before(until) {
				st.res.Skipped, st.res.SkippedUntil = true, until
				continue
			}
			delete(c.skip, addr)
		}
		contacted = append(contacted, addr)
	}
	pending := len(contacted) * c.cfg.Requests

	// Responses are read while the requests go out, so each is timed when
	// it arrives, not when the last request has been sent.
	sendDone := make(chan time.Time, 1)
	go func() {
		buf := make([]byte, 0, wireqos.MaxPacket)
		custom := make([]byte, max(probeLen, c.cfg.PacketSize))
		for _, addr := range contacted {
			st := byAddr[addr]
			dst := net.UDPAddrFromAddrPort(addr)
			for seq := range c.cfg.Requests {
				if seq > 0 && seq%10 == 0 {
					// A short pause every ten sends keeps a burst from
					// overrunning socket buffers on the way.
					time.Sleep(time.Millisecond)
				}
				buf = c.appendRequest(buf[:0], custom, uint8(seq), st.id, c.cfg.Now().Sub(start))
				if _, err := conn.WriteTo(buf, dst); err != nil {
					st.res.Err = err
					break
				}
				st.res.Sent++
			}
		}
		sendDone <- time.Now()
	}()

	// Socket deadlines run on the wall clock whatever clock measures latency.
	var waitUntil time.Time
	sending := true
	rbuf := make([]byte, 65536)
	for pending > 0 && ctx.Err() == nil {
		if sending {
			select {
			case t := <-sendDone:
				sending, waitUntil = false, t.Add(c.cfg.Wait)
			default:
			}
		}
		step := time.Now().Add(50 * time.Millisecond)
		if !sending && waitUntil.Before(step) {
			step = waitUntil
		}
		_ = conn.SetReadDeadline(step)
		n, from, err := conn.ReadFrom(rbuf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if !sending && !time.Now().Before(waitUntil) {
					break
				}
				continue
			}
			if !sending {
				return results, err
			}
			<-sendDone
			return results, err
		}
		recvAt := c.cfg.Now()
		ua, ok := from.(*net.UDPAddr)
		if !ok {
			continue
		}
		fa := ua.AddrPort()
		st := byAddr[netip.AddrPortFrom(fa.Addr().Unmap(), fa.Port())]
		if st == nil {
			continue // not a server we asked
		}
		var resp wireqos.Response
		if resp.Decode(rbuf[:n]) != nil || len(resp.Custom) < customLen {
			continue
		}
		if binary.LittleEndian.Uint16(resp.Custom[1:]) != st.id {
			st.res.Stale++
			continue
		}
		seq := resp.Custom[0]
		if int(seq) >= c.cfg.Requests || st.seen[seq] {
			st.res.Duplicates++
			continue
		}
		st.seen[seq] = true
		st.res.Received++
		pending--
		sentAt := time.Duration(binary.LittleEndian.Uint64(resp.Custom[3:]))
		st.res.Latencies = append(st.res.Latencies, recvAt.Sub(start)-sentAt)
		if stronger(resp.Flow, st.res.Flow) {
			st.res.Flow = resp.Flow
		}
	}
	if sending {
		<-sendDone // the sender is bounded; its counts are read below
	}
	for _, addr := range order {
		r := byAddr[addr].res
		slices.Sort(r.Latencies)
		if r.Flow != wireqos.FlowNone {
			until := start.Add(r.Flow.Duration() + c.cfg.Margin)
			c.skip[addr] = until
			r.SkippedUntil = until
		}
	}
	return results, nil
}

func (c *Checker) localAddr() string {
	if c.cfg.Local != "" {
		return c.cfg.Local
	}
	return ":0"
}

// appendRequest builds one request in b, using custom (zeroed past the
// header fields, and long enough for any padding) as scratch.
func (c *Checker) appendRequest(b, custom []byte, seq uint8, id uint16, sentAt time.Duration) []byte {
	custom[0] = seq
	binary.LittleEndian.PutUint16(custom[1:], id)
	binary.LittleEndian.PutUint64(custom[3:], uint64(sentAt))
	n := max(customLen, c.cfg.PacketSize-(3+len(c.cfg.Title)))
	if c.prober != nil {
		// A probe's custom data has its own length; it is not padded.
		c.prober.sign(custom, time.Now())
		n = probeLen
	}
	req := wireqos.Request{Title: []byte(c.cfg.Title), Custom: custom[:min(n, len(custom))]}
	b, _ = req.AppendTo(b) // NewChecker bounded the title and size
	return b
}

// stronger orders flow control: any ban over any back-off over none, then
// by duration.
func stronger(a, b wireqos.FlowControl) bool {
	rank := func(f wireqos.FlowControl) int {
		switch {
		case f.IsBan():
			return 100 + f.Units()
		case f.IsBackoff():
			return f.Units()
		}
		return 0
	}
	return rank(a) > rank(b)
}

// RegionResult is the QoS of one region: the result of its server.
type RegionResult struct {
	Region string
	*ServerResult
}

// ByRegion spreads per-server results over the regions each server serves,
// in the order regions first appear in targets.
func ByRegion(targets []Target, results []*ServerResult) []RegionResult {
	byAddr := make(map[netip.AddrPort]*ServerResult, len(results))
	for _, r := range results {
		byAddr[r.Addr] = r
	}
	var out []RegionResult
	seen := make(map[string]bool)
	for _, t := range targets {
		if seen[t.Region] {
			continue
		}
		addr := netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
		if r, ok := byAddr[addr]; ok {
			seen[t.Region] = true
			out = append(out, RegionResult{Region: t.Region, ServerResult: r})
		}
	}
	return out
}
