package openttd

import "github.com/gamegate/gamegate/handlers/query"

// Config is the configuration of OpenTTD's server query
// (gamegate.query.openttd, game_query's openttd; GameDig's game openttd):
// the game-info request over the server's TCP port (3979 by default),
// answered by its NetworkGameInfo (versions 1 to 7). A status maps the
// server's name, revision, password flag, clients online and the client
// limit; raw holds the rest by GameDig's names (companies, dates as
// YYYY-MM-DD, map size, landscape, NewGRFs, game script). The answer lists
// no players. Each attempt is one connection, bounded by attempt_timeout.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{Timeout: c.AttemptTimeout.Std(), Retries: c.Retries}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
