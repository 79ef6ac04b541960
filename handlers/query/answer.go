package query

import (
	"bytes"
	"context"
	"time"
)

// Answer sends request to address and returns a copy of the first
// datagram isAnswer accepts (others are dropped: another query's answer, a
// wrong challenge, noise), and the round trip to it measured with now
// (Now's clock). Failures are Exchange's. For the protocols whose answer
// is one datagram.
func (x *UDPExchange) Answer(ctx context.Context, address string, request []byte, now func() time.Time, isAnswer func(datagram []byte) bool) ([]byte, time.Duration, error) {
	var answer []byte
	var at time.Time
	start := Now(now)
	err := x.Exchange(ctx, address, request, func(d []byte) (bool, error) {
		if !isAnswer(d) {
			return false, nil
		}
		answer, at = bytes.Clone(d), Now(now)
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	return answer, at.Sub(start), nil
}
