package gqp

import (
	"fmt"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// MaxPadTo bounds pad_to: a padded query fits one datagram of a common
// path MTU.
const MaxPadTo = 1500

// MinMaxResponse is the smallest max_response_size.
const MinMaxResponse = 64

// QueryConfig is the gqp game query protocol's configuration
// (gamegate.query.gqp): commands are sent as they are, and a server's
// status comes from identify plus an optional status command.
type QueryConfig struct {
	// attempt_timeout and retries.
	query.Attempts
	// Queries are padded to this many bytes, so servers that refuse to
	// amplify (gamegate's own GQP responder among them) answer in full,
	// at most 1500. Default: 1200.
	PadTo int `json:"pad_to,omitempty" caddyfile:"size"`
	// The command describing the server's state, asked with identify for
	// a status: a GQP command name (no control characters) short enough
	// for the query to fit one datagram. Default: none (identify only).
	StatusCommand string `json:"status_command,omitempty"`
	// Largest answer accepted, in bytes, 64 to 65536. Default: 65536.
	MaxResponseSize int `json:"max_response_size,omitempty"`

	// Deprecated: the former name of max_response_size, still read (with
	// a warning).
	MaxResponse int `json:"max_response,omitempty"`
}

// Validate checks the options' ranges.
func (c *QueryConfig) Validate() error {
	return bounds.First(
		c.Attempts.Validate(),
		c.checkStatusCommand(),
		bounds.Int("pad_to", c.PadTo, 0, MaxPadTo),
		bounds.Int("max_response_size", c.MaxResponseSize, MinMaxResponse, wiregqp.MaxResponse),
	)
}

// CheckOption checks status_command: the status query, identify and it,
// must be one GQP can send, else every status would fail.
func (*QueryConfig) CheckOption(name, value string) error {
	if name != "status_command" || value == "" {
		return nil
	}
	q := new(wiregqp.Query)
	q.Add([]byte("identify"))
	q.Add([]byte(value))
	if _, err := q.AppendTo(nil); err != nil {
		return fmt.Errorf("%q cannot be sent: %v", value, err)
	}
	return nil
}

func (c *QueryConfig) checkStatusCommand() error {
	if err := c.CheckOption("status_command", c.StatusCommand); err != nil {
		return fmt.Errorf("status_command: %w", err)
	}
	return nil
}

// RenamedOptions returns the former names of attempt_timeout and
// max_response_size.
func (c *QueryConfig) RenamedOptions() []query.Renamed {
	return append(c.Attempts.RenamedOptions(), query.Renamed{Former: "max_response", Current: "max_response_size"})
}

// NewProtocol builds the protocol.
func (c *QueryConfig) NewProtocol() (query.Protocol, error) {
	x := c.Exchange()
	return &QueryProtocol{
		Client:        &Client{Timeout: x.Timeout, Retries: x.Retries, PadTo: c.PadTo, MaxResponse: c.MaxResponseSize},
		StatusCommand: c.StatusCommand,
	}, nil
}

var (
	_ query.ProtocolConfig = (*QueryConfig)(nil)
	_ query.Renamer        = (*QueryConfig)(nil)
	_ query.OptionChecker  = (*QueryConfig)(nil)
)
