package query

import (
	"context"
	"errors"
	"net/http"

	"github.com/gamegate/gamegate/internal/bounds"
)

// The bounds of Budget.
const (
	DefaultMaxPackets      = 16
	MaxMaxPackets          = 128
	DefaultMaxResponseSize = 64 << 10
	MinMaxResponseSize     = 1400
	MaxMaxResponseSize     = 1 << 20
)

// Budget bounds an answer that comes in several datagrams (the GameSpy
// protocols' parts): a protocol's Config embeds it, so the options are
// the same everywhere.
type Budget struct {
	// Most datagrams one answer may take, 1 to 128. Default: 16.
	MaxPackets int `json:"max_packets,omitempty"`
	// Most bytes one answer may take, over all its datagrams, 1400 to
	// 1048576. Default: 65536.
	MaxResponseSize int `json:"max_response_size,omitempty"`
}

// Validate checks the options' ranges.
func (b *Budget) Validate() error {
	return bounds.First(
		bounds.Int("max_packets", b.MaxPackets, 1, MaxMaxPackets),
		bounds.Int("max_response_size", b.MaxResponseSize, MinMaxResponseSize, MaxMaxResponseSize))
}

// Spent is what an answer has taken of its Budget so far.
type Spent struct{ Packets, Bytes int }

// The errors of an answer past its budget.
var (
	ErrTooManyPackets = errors.New("the answer has more datagrams than max_packets")
	ErrTooLarge       = errors.New("the answer is larger than max_response_size")
)

// Spend takes one more datagram of n bytes into spent, or returns the
// error of the bound it would pass.
func (b *Budget) Spend(spent *Spent, n int) error {
	maxPackets, maxBytes := b.MaxPackets, b.MaxResponseSize
	if maxPackets == 0 {
		maxPackets = DefaultMaxPackets
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxResponseSize
	}
	switch {
	case spent.Packets >= maxPackets:
		return ErrTooManyPackets
	case n > maxBytes-spent.Bytes:
		return ErrTooLarge
	}
	spent.Packets++
	spent.Bytes += n
	return nil
}

// RawCommand answers the one command of protocol name, "raw", with what
// load returns; any other command is 404 and arguments are 400.
func RawCommand(name, command string, args []string, load func() (any, error)) (any, error) {
	if command != "raw" {
		return nil, Errorf(http.StatusNotFound, "%s has no command %q (it has raw)", name, command)
	}
	if len(args) != 0 {
		return nil, Errorf(http.StatusBadRequest, "the raw command takes no arguments")
	}
	return load()
}

// StatusRawCommand is RawCommand answering the raw data of p's status.
func StatusRawCommand(ctx context.Context, p Protocol, address, command string, args []string) (any, error) {
	return RawCommand(p.Name(), command, args, func() (any, error) {
		st, err := p.Status(ctx, address)
		if err != nil {
			return nil, err
		}
		return st.Raw, nil
	})
}
