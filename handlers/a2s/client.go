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
	"time"

	"github.com/gamegate/gamegate/handlers/query"
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
	raddr, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		return nil, err
	}
	x := query.UDPExchange{Timeout: c.Timeout, Retries: c.Retries, OnSend: c.OnSend}
	var answer *Answer
	err = x.Run(ctx, raddr, func(at *query.Attempt) (func([]byte) (bool, error), error) {
		return c.attempt(at, typ, &answer)
	})
	if errors.Is(err, query.ErrNoAnswer) {
		return nil, ErrTimeout
	}
	return answer, err
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

// attempt sends the request of one attempt and returns what takes the
// datagrams that come back: it follows challenges (sending the request
// again) and reassembles the answer into *answer.
func (c *Client) attempt(at *query.Attempt, typ wirea2s.Type, answer **Answer) (func([]byte) (bool, error), error) {
	req := wirea2s.Request{Type: typ, Challenge: wirea2s.NoChallenge, HasChallenge: typ != wirea2s.TypeInfoRequest}
	send := func() (time.Time, error) {
		b, err := req.AppendTo(make([]byte, 0, wirea2s.InfoRequestLen+4))
		if err != nil {
			return time.Time{}, err
		}
		if err := at.Send(b); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
	sent, err := send()
	if err != nil {
		return nil, err
	}
	re := wirea2s.Reassembler{Layout: c.Layout, MaxPackets: c.MaxPackets, MaxMessage: c.MaxMessage}
	rounds := 0
	return func(d []byte) (bool, error) {
		if h, t, err := wirea2s.Peek(d); err != nil {
			return false, &ProtocolError{Err: err}
		} else if h == wirea2s.HeaderSingle && t == wirea2s.TypeChallenge {
			ch, err := wirea2s.DecodeChallenge(d)
			if err != nil {
				return false, &ProtocolError{Err: err}
			}
			if rounds++; rounds > maxChallengeRounds {
				return false, &ProtocolError{Err: ErrChallengeLoop}
			}
			req.Challenge, req.HasChallenge = ch, true
			re.Reset()
			sent, err = send()
			return false, err
		}
		complete, err := re.Add(d)
		if err != nil {
			return false, &ProtocolError{Err: err}
		}
		if !complete {
			return false, nil
		}
		msg := re.Message()
		_, t, err := wirea2s.Peek(msg)
		if err != nil {
			return false, &ProtocolError{Err: err}
		}
		if !wants(typ, t) {
			return false, &ProtocolError{Err: errors.New("the answer is of type " + string(rune(t)) + ", not the one asked for")}
		}
		a := &Answer{Message: bytes.Clone(msg), Layout: re.SplitLayout(), RTT: time.Since(sent)}
		if data, size, crc, ok := re.Compressed(); ok {
			a.Compressed, a.Size, a.CRC = bytes.Clone(data), size, crc
		}
		*answer = a
		return true, nil
	}, nil
}
