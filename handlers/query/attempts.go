package query

import (
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
)

// The bounds of Attempts. With at most MaxRetries+1 attempts of at most
// MaxAttemptTimeout, every wait derived from them is well defined.
const (
	MaxAttemptTimeout = time.Hour
	MinRetries        = -1
	MaxRetries        = 10
)

// Attempts are the options of a protocol that tries a datagram exchange up
// to 1+Retries times, each attempt bounded by AttemptTimeout: a protocol's
// Config embeds them, so their JSON keys and Caddyfile options are the same
// everywhere. The whole query is bounded by the game_query handler's
// query_timeout.
type Attempts struct {
	// Time one attempt waits for the complete answer, at most 1h.
	// Default: 1s.
	AttemptTimeout time.Duration `json:"attempt_timeout,omitempty"`
	// Attempts after the first, -1 (none) to 10. Default: 1.
	Retries int `json:"retries,omitempty"`
}

// Validate checks the options' ranges.
func (a *Attempts) Validate() error {
	return bounds.First(
		bounds.Duration("attempt_timeout", a.AttemptTimeout, 0, MaxAttemptTimeout),
		bounds.Int("retries", a.Retries, MinRetries, MaxRetries),
	)
}

// Exchange returns the datagram exchange the options describe.
func (a *Attempts) Exchange() UDPExchange {
	return UDPExchange{Timeout: a.AttemptTimeout, Retries: a.Retries}
}
