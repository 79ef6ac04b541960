package bedrock

import "github.com/gamegate/gamegate/handlers/query"

// Config is the configuration of Minecraft Bedrock edition's server
// status (gamegate.query.bedrock, game_query's bedrock; Minecraft
// Education's too, and servers such as PocketMine-MP, Nukkit and Geyser
// that answer as Bedrock does): RakNet's unconnected ping over UDP,
// answered by a pong whose advertisement holds the MOTD, protocol,
// version, players online and max, level name, game mode and ports. Each
// ping carries a random time and only the pong echoing it is taken. A
// status maps the MOTD's first line (without § codes) as the name, its
// second line (the level name) as the map, version and player counts;
// every field is kept under raw (gamemode, gamemode_numeric, port_v4, …)
// and latency is the ping's round trip. The pong lists no players. A
// server address without a port gets Bedrock's 19132. Command: raw (the
// advertisement as sent).
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
