package gamespy1

import (
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
)

// Config is the configuration of the GameSpy 1 query
// (gamegate.query.gamespy1, game_query's gamespy1: Unreal, Unreal
// Tournament, Battlefield 1942, Medal of Honor, Postal 2 and the other
// games GameDig reads with its gamespy1 protocol). A status asks
// \status\xserverquery and gathers every part of the answer; the
// player_N, frags_N… keys become players, teamname_N the team names; the
// other keys are raw, their values typed as GameDig types them. Text is
// read as Windows-1252. Command: raw (the answer's keys as sent).
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
	// max_packets and max_response_size.
	query.Budget
}

// Validate checks the options' ranges.
func (c *Config) Validate() error {
	return bounds.First(c.Attempts.Validate(), c.Budget.Validate())
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange(), Budget: c.Budget}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
