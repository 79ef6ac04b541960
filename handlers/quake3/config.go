package quake3

import "github.com/gamegate/gamegate/handlers/query"

// Config is the configuration of the Quake 3 family's server query
// (gamegate.query.quake3, game_query's quake3: ioquake3, OpenArena,
// Quake III Arena, Urban Terror, DarkPlaces, Xonotic, Nexuiz and other
// engines answering getstatus/getinfo). Each query carries a random
// challenge and only the answer echoing it is taken. A status maps the info
// string's host name (without colour codes), map, version, max players and
// password flag, and one player per status line (bots are the players with
// ping 0); the info string is kept under raw. Commands: info, rules,
// players.
//
// ioquake3 answers at most 10 queries a second from one address; keep the
// gateway's upstream_rate at or below that.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
