package query

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// MaxDatagram is the largest UDP payload a query answer can be.
const MaxDatagram = 65507

// ErrNoAnswer is what UDPExchange.Run returns when no attempt got a
// complete answer in time.
var ErrNoAnswer = errors.New("no answer")

// UDPExchange sends a query datagram and waits for the answer it expects,
// the shape of every connectionless game query (GQP, A2S, Quake 3, RakNet's
// unconnected ping…).
type UDPExchange struct {
	// Timeout is how long one attempt waits for its answer. Default: 1s.
	Timeout time.Duration
	// Retries is the number of attempts after the first; -1 for none.
	// Default: 1.
	Retries int
	// Local is the address to send from. Default: any.
	Local *net.UDPAddr
	// OnSend, if set, is called for every datagram sent (for metrics).
	OnSend func()
}

// Attempt is the socket of one attempt, connected to the server.
type Attempt struct {
	conn   *net.UDPConn
	onSend func()
	quiet  time.Duration
}

// EndAfterQuiet makes the attempt end when no datagram has arrived for d,
// for answers whose datagrams carry no count (Unreal 2's rules and
// players): accept is then called with a nil datagram, and its verdict
// stands; false waits on, for datagrams, until the attempt's own timeout.
func (a *Attempt) EndAfterQuiet(d time.Duration) { a.quiet = d }

// Send sends a datagram to the server.
func (a *Attempt) Send(datagram []byte) error {
	if _, err := a.conn.Write(datagram); err != nil {
		return err
	}
	if a.onSend != nil {
		a.onSend()
	}
	return nil
}

// Run makes up to 1+Retries attempts to get an answer from raddr. Each
// attempt uses a fresh socket, connected so the kernel drops datagrams from
// other sources, so a late answer to one attempt cannot be taken for the
// next one's. start begins an attempt: it sends the request (Attempt.Send)
// and returns the function that takes each datagram that arrives, with
// per-attempt state of its own, or nil to end the attempt unanswered (a
// request that could not be sent). accept returns true when the answer is
// complete, an error when it is unusable, false to go on waiting (for
// another fragment, or because the datagram answers something else);
// its argument is only valid during the call, and it may send again.
//
// An attempt that gets no complete answer within Timeout is followed by the
// next; after the last, Run returns ErrNoAnswer. A port that nothing
// listens on ends the exchange at once: the host's ICMP port unreachable
// surfaces as ECONNREFUSED on the connected socket, and Run returns that
// error (errors.Is(err, syscall.ECONNREFUSED); Failure maps it to
// TypeRefused). It returns ctx.Err() once ctx ends, and the errors of start
// and accept, and of opening a socket, as they are.
func (x *UDPExchange) Run(ctx context.Context, raddr *net.UDPAddr, start func(*Attempt) (accept func(datagram []byte) (bool, error), err error)) error {
	timeout, retries := attemptsOf(x.Timeout, x.Retries)
	var buf []byte
	for attempt := 0; attempt <= retries; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if buf == nil {
			buf = make([]byte, MaxDatagram+1)
		}
		done, err := x.attempt(ctx, raddr, timeout, buf, start)
		if err != nil || done {
			return err
		}
	}
	return ErrNoAnswer
}

// attemptsOf returns an exchange's attempt timeout and retries with their
// defaults: 1s, and one retry (-1 for none).
func attemptsOf(timeout time.Duration, retries int) (time.Duration, int) {
	if timeout <= 0 {
		timeout = time.Second
	}
	if retries == 0 {
		retries = 1
	} else if retries < 0 {
		retries = 0
	}
	return timeout, retries
}

// BoundDeadline sets conn's deadline timeout from now, or at ctx's
// deadline if that comes first, and moves it into the past if ctx is
// cancelled, so that a blocked read or write returns at once. Call the
// function it returns when done with conn.
func BoundDeadline(ctx context.Context, conn interface{ SetDeadline(time.Time) error }, timeout time.Duration) (stop func() bool) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	return context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
}

func (x *UDPExchange) attempt(ctx context.Context, raddr *net.UDPAddr, timeout time.Duration, buf []byte, start func(*Attempt) (func([]byte) (bool, error), error)) (bool, error) {
	conn, err := net.DialUDP("udp", x.Local, raddr)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	defer BoundDeadline(ctx, conn, timeout)()
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	a := &Attempt{conn: conn, onSend: x.OnSend}
	accept, err := start(a)
	if err != nil || accept == nil {
		return false, err
	}
	for {
		quiet := a.quiet > 0 && ctx.Err() == nil && time.Now().Add(a.quiet).Before(deadline)
		if quiet {
			_ = conn.SetReadDeadline(time.Now().Add(a.quiet))
		}
		n, err := conn.Read(buf)
		if quiet && err == nil {
			_ = conn.SetReadDeadline(deadline)
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if quiet && errors.Is(err, os.ErrDeadlineExceeded) {
				if done, err := accept(nil); err != nil || done {
					return done, err
				}
				a.quiet = 0 // not complete: wait on for the rest
				_ = conn.SetReadDeadline(deadline)
				continue
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				return false, err // nothing listens there: retrying cannot help
			}
			var ne net.Error
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) {
				return false, nil // no answer in time, or the host unreachable for now
			}
			return false, err
		}
		if n > MaxDatagram {
			continue
		}
		if done, err := accept(buf[:n]); err != nil || done {
			return done, err
		}
	}
}

// Exchange sends request to address (host:port) and hands every datagram
// that arrives from it to accept, until accept returns true (the answer is
// complete) or an error (the answer is unusable), every attempt has timed
// out or ctx ends (see Run). Datagrams accept returns false for (another
// query's answer, a wrong challenge) are dropped and waiting goes on.
//
// An error from accept becomes a *Error from Upstream; every other failure
// one from Failure (timeout, refused, unresolved, unreachable).
func (x *UDPExchange) Exchange(ctx context.Context, address string, request []byte, accept func(datagram []byte) (bool, error)) error {
	return x.RunAddress(ctx, address, func(a *Attempt) (func([]byte) (bool, error), error) {
		if a.Send(request) != nil {
			return nil, nil // cannot be sent now (no route): as good as unanswered
		}
		return accept, nil
	})
}

// RunAddress is Run for address (host:port) with Exchange's errors: an
// error from an accept function becomes a *Error from Upstream; every
// other failure one from Failure. For queries of several requests at once
// or state of each attempt's own.
func (x *UDPExchange) RunAddress(ctx context.Context, address string, start func(*Attempt) (accept func(datagram []byte) (bool, error), err error)) error {
	raddr, err := net.ResolveUDPAddr("udp", address)
	if err != nil {
		return Failure(address, err)
	}
	var unusable error
	err = x.Run(ctx, raddr, func(a *Attempt) (func([]byte) (bool, error), error) {
		accept, err := start(a)
		if accept == nil || err != nil {
			return accept, err
		}
		return func(d []byte) (bool, error) {
			done, err := accept(d)
			unusable = err
			return done, err
		}, nil
	})
	switch {
	case err == nil:
		return nil
	case unusable != nil:
		return Upstream(address, unusable)
	}
	return Failure(address, err)
}
