package caddyquery

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/query"
)

// AttemptOptions are the options of the query protocols that try an
// exchange up to 1+retries times, each attempt bounded by attempt_timeout
// (a2s, gqp; the others embed query.Attempts in their Config): each embeds them, so their JSON keys and
// Caddyfile options are the same. The whole query is bounded by the
// game_query handler's query_timeout.
type AttemptOptions struct {
	// Time one attempt waits for the complete answer, at most 1h.
	// Default: 1s.
	AttemptTimeout caddy.Duration `json:"attempt_timeout,omitempty"`
	// Attempts after the first, -1 (none) to 10. Default: 1.
	Retries int `json:"retries,omitempty"`
	// Deprecated: the former name of attempt_timeout, still read (with a
	// warning at provision).
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// attemptRetriesRange bounds retries.
var attemptRetriesRange = caddyglue.IntRange{Lo: -1, Hi: 10}

// MaxResponseFormerNames are the renamed options of the query protocols
// with AttemptOptions and max_response_size (a2s, gqp).
var MaxResponseFormerNames = caddyglue.FormerNames{"timeout": "attempt_timeout", "max_response": "max_response_size"}

// provision moves the deprecated timeout to attempt_timeout.
func (o *AttemptOptions) ProvisionAttempts(ctx caddy.Context, module string) error {
	return caddyglue.Renamed(ctx, module, "timeout", "attempt_timeout", &o.Timeout, &o.AttemptTimeout)
}

// check checks the options, the attempt timeout named timeoutField.
// With at most 11 attempts of at most TimeoutRange's bound, every wait
// derived from them is well defined.
func (o *AttemptOptions) CheckAttempts(c *caddyglue.Checker, timeoutField string) {
	c.DurationIn(timeoutField, o.AttemptTimeout, caddyglue.TimeoutRange)
	c.In("retries", int64(o.Retries), attemptRetriesRange)
}

// exchange returns the datagram exchange the options describe.
func (o *AttemptOptions) exchange() query.UDPExchange {
	return query.UDPExchange{Timeout: time.Duration(o.AttemptTimeout), Retries: o.Retries}
}

// ParseOption parses the Caddyfile option opt if it is one of these;
// known is false otherwise.
func (o *AttemptOptions) ParseAttemptOption(d *caddyfile.Dispenser, opt string) (known bool, err error) {
	switch opt {
	case "attempt_timeout":
		o.AttemptTimeout, err = caddyglue.ParseDurationIn(d, caddyglue.TimeoutRange)
	case "retries":
		o.Retries, err = caddyglue.ParseIntIn(d, attemptRetriesRange)
	default:
		return false, nil
	}
	return true, err
}
