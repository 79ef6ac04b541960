// Package query is gamegate's game-query gateway, free of Caddy: HTTP
// requests about game servers become queries in the servers' own protocols
// (plugins implementing Protocol), answered as JSON, with a result cache that
// coalesces concurrent requests into one upstream query, serves stale results
// while refreshing or when a server fails, caches failures briefly, limits
// the query rate per server, and answers conditional requests with 304.
package query

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Protocol is a game query protocol: GQP, Freeciv, and whatever plugins add.
type Protocol interface {
	// Name is the protocol's name in answers ("gqp", "freeciv", …).
	Name() string
	// Status returns a server's state, normalised.
	Status(ctx context.Context, address string) (*Status, error)
	// Command runs one of the protocol's commands and returns its answer
	// as JSON-encodable data. Protocols without commands return an
	// *Error with status 404.
	Command(ctx context.Context, address, command string, args []string) (any, error)
}

// Status is a server's state in the shape query tools use (GameDig, qstat):
// the fields most clients show, and the protocol's own data under Raw.
type Status struct {
	Name       string         `json:"name"`
	Map        string         `json:"map"`
	Version    string         `json:"version"`
	NumPlayers int            `json:"numplayers"`
	MaxPlayers int            `json:"maxplayers"`
	Bots       int            `json:"bots"` // how many of the players are bots
	Players    []Player       `json:"players"`
	Password   bool           `json:"password"`
	Ping       int64          `json:"ping"` // milliseconds
	Protocol   string         `json:"protocol"`
	Address    string         `json:"address"`
	Raw        map[string]any `json:"raw"`
}

// Player is one player in a Status.
type Player struct {
	Name string         `json:"name"`
	Raw  map[string]any `json:"raw,omitempty"`
}

// Error is a failure with the HTTP status it maps to and a message that
// says what happened in words.
type Error struct {
	HTTPStatus int
	Message    string
	// ProtocolStatus is the protocol's own status code, when it sent one.
	ProtocolStatus int
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{HTTPStatus: status, Message: fmt.Sprintf(format, args...)}
}

// Timeout is the error for a server that did not answer.
func Timeout(address string) *Error {
	return Errorf(http.StatusGatewayTimeout, "the game server at %s did not answer in time", address)
}

// Upstream is the error for a server whose answer was unusable.
func Upstream(address string, err error) *Error {
	return Errorf(http.StatusBadGateway, "the game server at %s sent an answer that could not be used: %v", address, err)
}

// HTTPStatus returns the status an error maps to (500 for an error that is
// not an *Error).
func HTTPStatus(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.HTTPStatus
	}
	return http.StatusInternalServerError
}
