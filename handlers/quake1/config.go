// Package quake1 is the QuakeWorld status query (Quake 1's QuakeWorld
// servers: mvdsv, ezQuake, FTE…) for the game-query gateway: the quake2
// package's protocol in its QuakeWorld dialect.
package quake1

import (
	"github.com/gamegate/gamegate/handlers/quake2"
	"github.com/gamegate/gamegate/handlers/query"
	wireq2 "github.com/gamegate/gamegate/wire/quake2"
)

// Config is the configuration of the QuakeWorld status query
// (gamegate.query.quake1: GameDig's "quake"). A status maps the info
// string's hostname, map, maxclients, *version and needpass, and one
// player per line with its id, score, time, ping, skin and colours (bots
// are the players with ping 0); the info string is raw. Zero values are
// the defaults.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &quake2.QueryProtocol{UDPExchange: c.Exchange(), Dialect: wireq2.QuakeWorld}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
