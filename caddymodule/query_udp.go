package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gamegate/gamegate/handlers/query"
)

// udpQueryOptions are the options of the query protocols that send one
// datagram and wait for its answer (quake3, bedrock): each embeds them, so
// their JSON keys and Caddyfile options are the same.
type udpQueryOptions struct {
	// Time one attempt waits for the answer, at most 1h. Default: 1s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Attempts after the first; -1 for none. Default: 1.
	Retries int `json:"retries,omitempty"`
}

// validate checks the options of module.
func (o *udpQueryOptions) validate(module string) error {
	c := newChecker(module)
	if c.durationIn("timeout", o.Timeout, timeoutRange); c.err != nil {
		return c.err
	}
	if o.Retries < -1 || o.Retries > 10 {
		return fmt.Errorf("%s: retries must be from -1 to 10, not %d", module, o.Retries)
	}
	return nil
}

// exchange returns the datagram exchange the options describe.
func (o *udpQueryOptions) exchange() query.UDPExchange {
	return query.UDPExchange{Timeout: time.Duration(o.Timeout), Retries: o.Retries}
}

// unmarshalCaddyfile reads module's Caddyfile tokens: its name, no
// arguments, and a block of timeout and retries.
func (o *udpQueryOptions) unmarshalCaddyfile(d *caddyfile.Dispenser, module string) error {
	return parseModuleBlock(d, module, nil, func(opt string) error {
		var err error
		switch opt {
		case "timeout":
			o.Timeout, err = parseDurationIn(d, timeoutRange)
		case "retries":
			o.Retries, err = parseIntRange(d, -1, 10)
		default:
			return unknownOption(d, module, opt)
		}
		return err
	})
}
