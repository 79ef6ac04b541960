package query

import (
	"context"
	"net"
	"net/http"
	"time"
)

// MaxDatagram is the largest UDP payload a query answer can be.
const MaxDatagram = 65507

// UDPExchange sends a query datagram and waits for the answer it expects,
// the shape of every connectionless game query (Quake 3, RakNet's
// unconnected ping, A2S…).
type UDPExchange struct {
	// Timeout is how long one attempt waits for its answer. Default: 1s.
	Timeout time.Duration
	// Retries is the number of attempts after the first; -1 for none.
	// Default: 1.
	Retries int
}

// Exchange sends request to address (host:port) and hands every datagram
// that arrives from it to accept, until accept returns true (the answer is
// complete) or an error (the answer is unusable), the attempt times out or
// ctx ends. Datagrams accept returns false for (another query's answer, a
// wrong challenge) are dropped and waiting goes on. accept's argument is
// only valid during the call. Each attempt uses a fresh socket, connected
// so the kernel drops datagrams from other sources, so a late answer to one
// attempt cannot be taken for the next one's.
//
// No answer is a *Error from Timeout, an error from accept becomes one from
// Upstream.
func (x *UDPExchange) Exchange(ctx context.Context, address string, request []byte, accept func(datagram []byte) (bool, error)) error {
	timeout, retries := x.Timeout, x.Retries
	if timeout <= 0 {
		timeout = time.Second
	}
	if retries == 0 {
		retries = 1
	} else if retries < 0 {
		retries = 0
	}
	raddr, err := net.ResolveUDPAddr("udp", address)
	if err != nil {
		return Errorf(http.StatusBadGateway, "cannot resolve the game server's address %s: %v", address, err)
	}
	buf := make([]byte, MaxDatagram+1)
	for attempt := 0; attempt <= retries; attempt++ {
		if ctx.Err() != nil {
			break
		}
		done, err := x.attempt(ctx, raddr, request, timeout, buf, accept)
		if err != nil {
			return Upstream(address, err)
		}
		if done {
			return nil
		}
	}
	return Timeout(address)
}

func (x *UDPExchange) attempt(ctx context.Context, raddr *net.UDPAddr, request []byte, timeout time.Duration, buf []byte, accept func([]byte) (bool, error)) (bool, error) {
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return false, nil // no route now: the same as no answer
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(request); err != nil {
		return false, nil
	}
	for {
		n, err := conn.Read(buf)
		if err != nil {
			// The deadline, ctx's end, or an ICMP port-unreachable
			// surfacing on the connected socket: no answer.
			return false, nil
		}
		if n > MaxDatagram {
			continue
		}
		done, err := accept(buf[:n])
		if err != nil || done {
			return done, err
		}
	}
}
