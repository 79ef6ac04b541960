package mumbleping

import "github.com/gamegate/gamegate/handlers/query"

// Config is the configuration of Mumble's UDP ping (gamegate.query.mumbleping,
// game_query's mumbleping; GameDig's game mumble): the 12-byte ping a
// Mumble client sends a Murmur server, answered by its version, users
// online, user limit and allowed bandwidth. Each ping carries a random
// ident and only the pong echoing it is taken. A status maps the version
// (major.minor.patch) and the counts; raw holds versionMajor,
// versionMinor, versionPatch and allowedbandwidth (bits per second), as
// GameDig names them. The ping carries no server name and lists no users.
// The query port is the server's port (UDP; Murmur's default 64738).
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

var _ query.ProtocolConfig = (*Config)(nil)
