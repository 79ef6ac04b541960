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
	"time"
)

// Now is now(), or time.Now() when now is nil: the clock a protocol may be
// given (its Now field) for tests.
func Now(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}

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

// ReadOnlyCommander is implemented by protocols that have commands which
// only read a server's state. The gateway forwards those from HTTP by
// default (besides the normalised status); any other command, and every
// command of a protocol that does not implement this, is forwarded only when
// the server's command allow-list names it. Commands that authenticate
// (GQP's challenge and validate) or change a server's state must never be
// listed here.
type ReadOnlyCommander interface {
	ReadOnlyCommands() []string
}

// ReadOnlyCommands returns p's read-only commands, or none when p does not
// declare any.
func ReadOnlyCommands(p Protocol) []string {
	if r, ok := p.(ReadOnlyCommander); ok {
		return r.ReadOnlyCommands()
	}
	return nil
}

// PortFinder is implemented by protocols that find a server's port
// themselves when its address names none: Minecraft looks up the name's
// SRV record, Bedrock takes its default port. A server's address is
// host:port unless its protocol's FindsPort accepts it.
type PortFinder interface {
	// FindsPort reports whether address, which has no port, is one the
	// protocol completes. It must not depend on the protocol's settings:
	// configuration is checked with it before the protocol is set up, on
	// a zero (or nil) value.
	FindsPort(address string) bool
}

// FindsPort reports whether p accepts address without a port.
func FindsPort(p Protocol, address string) bool {
	f, ok := p.(PortFinder)
	return ok && f.FindsPort(address)
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
	// Message is what the client is told: words, never an internal
	// address, URL or operating-system error text.
	Message string
	// ProtocolStatus is the protocol's own status code, when it sent one.
	ProtocolStatus int
	// Detail is what happened, for the gateway's log only (it may name
	// internal addresses and carry operating-system errors).
	Detail error
	// RetryAfter, when set, is sent as Retry-After.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the detail.
func (e *Error) Unwrap() error { return e.Detail }

// Errorf returns an *Error.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{HTTPStatus: status, Message: fmt.Sprintf(format, args...)}
}

// Timeout is the error for a server that did not answer.
func Timeout(address string) *Error {
	return &Error{HTTPStatus: http.StatusGatewayTimeout, Message: "the game server did not answer in time",
		Detail: fmt.Errorf("%s: no answer in time", address)}
}

// Upstream is the error for a server whose answer was unusable. err says
// what was wrong with the answer, in the protocol's words, and is sent to
// the client: never pass a socket or operating-system error here (use
// Unreachable).
func Upstream(address string, err error) *Error {
	return &Error{HTTPStatus: http.StatusBadGateway, Message: "the game server sent an answer that could not be used: " + err.Error(),
		Detail: fmt.Errorf("%s: unusable answer: %w", address, err)}
}

// Unreachable is the error for a server that could not be queried at all (a
// socket or connection error); err is logged, not sent.
func Unreachable(address string, err error) *Error {
	return &Error{HTTPStatus: http.StatusBadGateway, Message: "the game server could not be queried",
		Detail: fmt.Errorf("%s: %w", address, err)}
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
