// Package caddyquery registers game_query, the game query protocols
// (gamegate.query.*), the game catalogue and the games command. Other
// families register their protocols with RegisterQueryProtocol and read
// game_query's gateways through LoadGateways.
package caddyquery
