package gamespy1

import (
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
)

// Bounds of the options.
const (
	DefaultMaxPackets = 16
	MaxMaxPackets     = 64
	DefaultMaxSize    = 64 << 10
	MinMaxSize        = 1400
	MaxMaxSize        = 1 << 20
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
	// Most datagrams one answer may take, 1 to 64. Default: 16.
	MaxPackets int `json:"max_packets,omitempty"`
	// Most bytes one answer may take, over all its datagrams, 1400 to
	// 1048576. Default: 65536.
	MaxResponseSize int `json:"max_response_size,omitempty"`
}

// Validate checks the options' ranges.
func (c *Config) Validate() error {
	return bounds.First(c.Attempts.Validate(),
		bounds.Int("max_packets", c.MaxPackets, 1, MaxMaxPackets),
		bounds.Int("max_response_size", c.MaxResponseSize, MinMaxSize, MaxMaxSize))
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange(),
		MaxPackets: orDefault(c.MaxPackets, DefaultMaxPackets), MaxSize: orDefault(c.MaxResponseSize, DefaultMaxSize)}, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

var _ query.ProtocolConfig = (*Config)(nil)
