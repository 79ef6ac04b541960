package gqp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// Client errors. A *ProtocolError wraps what made a response unusable.
var (
	// ErrTimeout: no complete response within the timeout, after every retry.
	ErrTimeout = errors.New("gqp: no response")
	// ErrIncomplete: part of a response came, but not its end, within the
	// timeout. Query reports it wrapped in a *ProtocolError.
	ErrIncomplete = errors.New("response ended before its EOT")
)

// ProtocolError reports a response that could not be used: it did not
// decode, was too long, or did not answer the query.
type ProtocolError struct{ Err error }

func (e *ProtocolError) Error() string { return "gqp: bad response: " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// Client sends GQP queries. The zero value is usable.
type Client struct {
	// Timeout is how long one attempt waits for a complete response.
	// Default: 1s.
	Timeout time.Duration
	// Retries is the number of attempts after the first. Default: 1.
	// Set to -1 for none.
	Retries int
	// MaxResponse bounds a response's total size. Default and maximum:
	// wire/gqp's MaxResponse (64 KiB).
	MaxResponse int
	// PadTo pads queries with the pad extension command to this many bytes,
	// so responders that refuse to amplify (gamegate's among them) answer in
	// full up to that size. Default: 1200. Set to -1 to send queries as they
	// are.
	PadTo int
	// Local is the local address to send from. Default: any.
	Local string
	// OnSend, if set, is called for every query datagram sent (for metrics).
	OnSend func()
}

// Query sends q to server (host:port) and returns its response, with the
// reply to the padding command removed. Each attempt uses a fresh socket,
// so a late answer to an earlier attempt cannot mix into a later one.
func (c *Client) Query(ctx context.Context, server string, q *wiregqp.Query) (*wiregqp.Response, error) {
	padTo := c.PadTo
	if padTo == 0 {
		padTo = 1200
	}
	datagram, padded, err := buildQuery(q, padTo)
	if err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		return nil, err
	}
	x := query.UDPExchange{Timeout: c.Timeout, Retries: c.Retries, OnSend: c.OnSend}
	if c.Local != "" {
		if x.Local, err = net.ResolveUDPAddr("udp", c.Local); err != nil {
			return nil, err
		}
	}
	var (
		re  wiregqp.Reassembler // the last attempt's
		raw []byte
	)
	err = x.Run(ctx, raddr, func(a *query.Attempt) (func([]byte) (bool, error), error) {
		re = wiregqp.Reassembler{Limit: c.MaxResponse}
		if err := a.Send(datagram); err != nil {
			return nil, err
		}
		return func(d []byte) (bool, error) {
			if len(re.Bytes()) == 0 && len(d) > 0 && d[0] != wiregqp.SOH && (d[0] < '0' || d[0] > '9') {
				// A response starts with an encoding header or a status
				// digit: this cannot become one, so do not wait for its end.
				return false, &ProtocolError{Err: errors.New("the answer does not start like a GQP response")}
			}
			complete, err := re.Add(d)
			if err != nil {
				return false, &ProtocolError{Err: err}
			}
			if complete {
				raw = bytes.Clone(re.Bytes())
			}
			return complete, nil
		}, nil
	})
	switch {
	case errors.Is(err, query.ErrNoAnswer) && len(re.Bytes()) > 0:
		return nil, &ProtocolError{Err: ErrIncomplete}
	case errors.Is(err, query.ErrNoAnswer):
		return nil, ErrTimeout
	case err != nil:
		return nil, err
	}
	return decodeResponse(raw, q, padded)
}

func buildQuery(q *wiregqp.Query, padTo int) ([]byte, bool, error) {
	datagram, err := q.AppendTo(nil)
	if err != nil {
		return nil, false, err
	}
	// The pad command adds "GS pad RS" and its argument.
	overhead := 1 + len(PadCommand) + 1
	if padTo <= 0 || len(datagram)+overhead >= padTo || len(q.Commands) >= wiregqp.MaxCommands {
		return datagram, false, nil
	}
	pq := wiregqp.Query{Encoding: q.Encoding, Commands: append(q.Commands[:len(q.Commands):len(q.Commands)],
		wiregqp.Command{Name: []byte(PadCommand), Args: [][]byte{bytes.Repeat([]byte{'.'}, padTo-len(datagram)-overhead)}})}
	padded, err := pq.AppendTo(nil)
	if err != nil {
		return datagram, false, nil
	}
	return padded, true, nil
}

func decodeResponse(raw []byte, q *wiregqp.Query, padded bool) (*wiregqp.Response, error) {
	resp := new(wiregqp.Response)
	if err := resp.Decode(raw); err != nil {
		return nil, &ProtocolError{Err: err}
	}
	if padded {
		// The last reply answers the padding command, whatever the server
		// made of it.
		if n := len(resp.Replies); n == len(q.Commands)+1 && string(resp.Replies[n-1].Name) == PadCommand {
			resp.Replies = resp.Replies[:n-1]
		}
	}
	// One reply per command; a single nameless reply is the server's 40 or
	// 41 for the whole query.
	if len(resp.Replies) != len(q.Commands) {
		if len(resp.Replies) == 1 && len(resp.Replies[0].Name) == 0 {
			return resp, nil
		}
		return nil, &ProtocolError{Err: fmt.Errorf("%d replies to %d commands", len(resp.Replies), len(q.Commands))}
	}
	return resp, nil
}
