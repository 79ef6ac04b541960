package query

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// TCPExchange runs a query over a TCP connection, the shape of the
// protocols that answer on a stream (Frostbite's remote administration,
// GbxRemote): each attempt dials the address afresh and runs the whole
// conversation on that connection within its timeout.
//
// It dials exactly the address it is given: the gateway hands a protocol
// the address it resolved and checked against allow_targets, and a stream
// protocol must not resolve a name of its own, so a TCP query reaches only
// what a UDP one could.
type TCPExchange struct {
	// Timeout bounds one attempt: the dial and the whole conversation.
	// Default: 1s.
	Timeout time.Duration
	// Retries is the number of attempts after the first; -1 for none.
	// Default: 1.
	Retries int
}

// TCPExchange returns the stream exchange the options describe.
func (a *Attempts) TCPExchange() TCPExchange {
	return TCPExchange{Timeout: a.AttemptTimeout.Std(), Retries: a.Retries}
}

// Run makes up to 1+Retries attempts to run converse on a connection to
// address (host:port, its host an IP address). converse's connection has
// its deadline set to the attempt's end (or ctx's); an error it returns
// that is not one of the network (a timeout, a connection closed or reset
// early) is the answer's fault and ends the exchange as a *Error from
// Upstream, as does an *Error, which stays as it is. A refused connection
// ends it at once; the last attempt's network failure becomes a *Error
// from Failure.
func (x *TCPExchange) Run(ctx context.Context, address string, converse func(conn net.Conn) error) error {
	timeout, retries := AttemptLimits(x.Timeout, x.Retries)
	var last error
	for attempt := 0; attempt <= retries; attempt++ {
		if err := ctx.Err(); err != nil {
			return Failure(address, err)
		}
		err := x.attempt(ctx, address, timeout, converse)
		var e *Error
		switch {
		case err == nil:
			return nil
		case errors.As(err, &e):
			return e
		case errors.Is(err, syscall.ECONNREFUSED):
			return Failure(address, err)
		case !networkFailure(err):
			return Upstream(address, err)
		}
		last = err
	}
	return Failure(address, last)
}

func (x *TCPExchange) attempt(ctx context.Context, address string, timeout time.Duration, converse func(net.Conn) error) error {
	// The dial and the conversation share the attempt's one deadline.
	end := time.Now().Add(timeout)
	actx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(actx, "tcp", address)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer BoundDeadline(ctx, conn, time.Until(end))()
	return converse(conn)
}

// networkFailure reports whether err is the connection's (a timeout, a
// reset, an early close) rather than the answer's.
func networkFailure(err error) bool {
	var ne net.Error
	var op *net.OpError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &ne) || errors.As(err, &op) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
