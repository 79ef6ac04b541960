package teeworlds

import "github.com/gamegate/gamegate/handlers/query"

// Config is the configuration of Teeworlds 0.7's server info query
// (gamegate.query.teeworlds, game_query's teeworlds; GameDig has no
// protocol for it): a token exchange, then the info request, both over the
// game's UDP port. Each query carries random tokens and only answers
// addressed to them are taken. A status maps the server's name, map,
// version, password flag, clients and client limit, and lists the clients
// (people in players, spectators among them, bots in bots) with their
// clan, country, score and flags under raw. An attempt is the whole
// two-step exchange, bounded by attempt_timeout.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
