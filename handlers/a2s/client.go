// Package a2s queries Valve game servers (A2S over UDP) and shields them:
// the Client asks A2S_INFO, A2S_PLAYER and A2S_RULES with their challenge
// flows and split, compressed answers; QueryProtocol is A2S for the
// game-query gateway; Shield answers A2S queries for a game server from a
// cache, with challenges of its own.
package a2s

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"time"

	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// Client errors. A *ProtocolError wraps what made an answer unusable.
var (
	// ErrTimeout: no complete answer within the timeout, after every retry.
	ErrTimeout = errors.New("a2s: no answer")
	// ErrChallengeLoop: the server kept answering with new challenges.
	ErrChallengeLoop = errors.New("the server answered every request with another challenge")
)

// ProtocolError reports an answer that could not be used.
type ProtocolError struct{ Err error }

func (e *ProtocolError) Error() string { return "a2s: bad answer: " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// maxChallengeRounds bounds how many S2C_CHALLENGE answers one attempt
// follows: a server gives one, and a second covers a challenge that
// changed in between.
const maxChallengeRounds = 3

// Client sends A2S queries. The zero value is usable.
type Client struct {
	// Timeout is how long one attempt waits for a complete answer, its
	// challenge rounds included. Default: 1s.
	Timeout time.Duration
	// Retries is the number of attempts after the first. Default: 1. Set
	// to -1 for none.
	Retries int
	// Layout of split answers. Default: LayoutAuto, told from the first
	// fragment.
	Layout wirea2s.Layout
	// MaxPackets bounds the fragments of one answer. Default:
	// wire/a2s's DefaultMaxPackets.
	MaxPackets int
	// MaxMessage bounds one answer in bytes, compressed and decompressed.
	// Default: wire/a2s's DefaultMaxMessage.
	MaxMessage int
	// OnSend, if set, is called for every request datagram sent.
	OnSend func()
}

// Answer is a server's answer to one request.
type Answer struct {
	// Message is the whole answer (decompressed), from its int32 -1 header.
	Message []byte
	// Compressed, when the server sent the answer compressed, is its bzip2
	// data with the size and CRC32 it announced.
	Compressed []byte
	Size, CRC  uint32
	// Layout of the fragments, for an answer that came split.
	Layout wirea2s.Layout
	// RTT is the time from the last request sent to the answer's end.
	RTT time.Duration
}

// Query sends a request of type typ (TypeInfoRequest, TypePlayerRequest or
// TypeRulesRequest) to server (host:port), follows S2C_CHALLENGE answers,
// and returns the answer. An answer of another type than the request's is
// a *ProtocolError, except that an A2S_INFO request accepts both the
// Source and the GoldSrc answer. Each attempt uses a fresh connected
// socket, so a late answer to an earlier attempt cannot mix in.
func (c *Client) Query(ctx context.Context, server string, typ wirea2s.Type) (*Answer, error) {
	timeout, retries := c.Timeout, c.Retries
	if timeout <= 0 {
		timeout = time.Second
	}
	if retries == 0 {
		retries = 1
	} else if retries < 0 {
		retries = 0
	}
	raddr, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt <= retries; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a, err := c.attempt(ctx, raddr, typ, timeout)
		if errors.Is(err, ErrTimeout) {
			continue
		}
		return a, err
	}
	return nil, ErrTimeout
}

func wants(req, got wirea2s.Type) bool {
	switch req {
	case wirea2s.TypeInfoRequest:
		return got == wirea2s.TypeInfo || got == wirea2s.TypeInfoGoldSrc
	case wirea2s.TypePlayerRequest:
		return got == wirea2s.TypePlayers
	case wirea2s.TypeRulesRequest:
		return got == wirea2s.TypeRules
	}
	return false
}

func (c *Client) attempt(ctx context.Context, raddr *net.UDPAddr, typ wirea2s.Type, timeout time.Duration) (*Answer, error) {
	conn, err := net.DialUDP("udp", nil, raddr) // connected: the kernel drops other sources
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req := wirea2s.Request{Type: typ, Challenge: wirea2s.NoChallenge, HasChallenge: typ != wirea2s.TypeInfoRequest}
	send := func() (time.Time, error) {
		b, err := req.AppendTo(make([]byte, 0, wirea2s.InfoRequestLen+4))
		if err != nil {
			return time.Time{}, err
		}
		if _, err := conn.Write(b); err != nil {
			return time.Time{}, err
		}
		if c.OnSend != nil {
			c.OnSend()
		}
		return time.Now(), nil
	}
	sent, err := send()
	if err != nil {
		return nil, err
	}
	re := wirea2s.Reassembler{Layout: c.Layout, MaxPackets: c.MaxPackets, MaxMessage: c.MaxMessage}
	buf := make([]byte, wirea2s.MaxDatagram+1)
	rounds := 0
	for {
		n, err := conn.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var ne net.Error
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) {
				// An ICMP port-unreachable surfaces as a read error on a
				// connected socket: nobody is listening, as good as silence.
				return nil, ErrTimeout
			}
			return nil, err
		}
		d := buf[:n]
		if h, t, err := wirea2s.Peek(d); err != nil {
			return nil, &ProtocolError{Err: err}
		} else if h == wirea2s.HeaderSingle && t == wirea2s.TypeChallenge {
			ch, err := wirea2s.DecodeChallenge(d)
			if err != nil {
				return nil, &ProtocolError{Err: err}
			}
			if rounds++; rounds > maxChallengeRounds {
				return nil, &ProtocolError{Err: ErrChallengeLoop}
			}
			req.Challenge, req.HasChallenge = ch, true
			re.Reset()
			if sent, err = send(); err != nil {
				return nil, err
			}
			continue
		}
		complete, err := re.Add(d)
		if err != nil {
			return nil, &ProtocolError{Err: err}
		}
		if !complete {
			continue
		}
		msg := re.Message()
		_, t, err := wirea2s.Peek(msg)
		if err != nil {
			return nil, &ProtocolError{Err: err}
		}
		if !wants(typ, t) {
			return nil, &ProtocolError{Err: errors.New("the answer is of type " + string(rune(t)) + ", not the one asked for")}
		}
		a := &Answer{Message: bytes.Clone(msg), Layout: re.SplitLayout(), RTT: time.Since(sent)}
		if data, size, crc, ok := re.Compressed(); ok {
			a.Compressed, a.Size, a.CRC = bytes.Clone(data), size, crc
		}
		return a, nil
	}
}
