package query

import (
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
)

// The bounds of Attempts. With at most MaxRetries+1 attempts of at most
// MaxAttemptTimeout, every wait derived from them is well defined.
const (
	MaxAttemptTimeout = time.Hour
	MinRetries        = -1
	MaxRetries        = 10
)

// Attempts are the options of a protocol that tries a datagram exchange up
// to 1+Retries times, each attempt bounded by AttemptTimeout (a2s, gqp,
// quake3, bedrock, the GameSpy protocols…): a protocol's Config embeds
// them, so their JSON keys and Caddyfile options are the same everywhere.
// The whole query is bounded by the game_query handler's query_timeout.
type Attempts struct {
	// Time one attempt waits for the complete answer, at most 1h.
	// Default: 1s.
	AttemptTimeout duration.Duration `json:"attempt_timeout,omitempty"`
	// Attempts after the first, -1 (none) to 10. Default: 1.
	Retries int `json:"retries,omitempty"`
	// Deprecated: the former name of attempt_timeout, still read (with a
	// warning).
	Timeout duration.Duration `json:"timeout,omitempty"`
}

// Validate checks the options' ranges.
func (a *Attempts) Validate() error {
	return bounds.First(
		bounds.Duration("attempt_timeout", a.AttemptTimeout.Std(), 0, MaxAttemptTimeout),
		bounds.Int("retries", a.Retries, MinRetries, MaxRetries),
	)
}

// RenamedOptions returns timeout, attempt_timeout's former name.
func (*Attempts) RenamedOptions() []Renamed {
	return []Renamed{{Former: "timeout", Current: "attempt_timeout"}}
}

// Exchange returns the datagram exchange the options describe.
func (a *Attempts) Exchange() UDPExchange {
	return UDPExchange{Timeout: a.AttemptTimeout.Std(), Retries: a.Retries}
}
