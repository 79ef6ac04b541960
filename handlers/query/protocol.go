// Package query is gamegate's game-query gateway, free of Caddy: HTTP
// requests about game servers become queries in the servers' own protocols
// (plugins implementing Protocol), answered as JSON, with a result cache that
// coalesces concurrent requests into one upstream query, serves stale results
// while refreshing or when a server fails, caches failures briefly, limits
// the query rate per server, and answers conditional requests with 304.
package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
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

// Status is a server's state in the shape of GameDig's results (its
// Results and Player classes, v5), which status pages, bots and uptime
// tools already read: the same field names and JSON types, with the
// protocol's own data under Raw. Players are people and Bots are bots,
// each with its protocol's per-player fields under its Raw; NumPlayers is
// the count the server reports, which may include bots. Protocol and
// Address are gamegate's own, beside GameDig's fields.
//
// Where gamegate's former fields clashed (bots was a count), the GameDig
// shape won. Players, Bots and Raw are never null in JSON.
type Status struct {
	Name       string   `json:"name"`
	Map        string   `json:"map"`
	Password   bool     `json:"password"`
	NumPlayers int      `json:"numplayers"`
	MaxPlayers int      `json:"maxplayers"`
	Players    []Player `json:"players"`
	Bots       []Player `json:"bots"`
	// Connect is the host:port a game client joins: the game port, which
	// may differ from the query port (A2S's extra data port, Bedrock's
	// advertised IPv4 port).
	Connect   string         `json:"connect"`
	QueryPort int            `json:"queryPort"`
	Ping      int64          `json:"ping"` // milliseconds
	Version   string         `json:"version"`
	Raw       map[string]any `json:"raw"`
	// gamegate's own: the protocol's name and the query address asked.
	Protocol string `json:"protocol"`
	Address  string `json:"address"`
}

// SetAddress sets the query address asked (Address and QueryPort) and
// Connect: address's host with gamePort when the server named a game port
// (1 to 65535), else address itself.
func (s *Status) SetAddress(address string, gamePort int) {
	s.Address, s.Connect = address, address
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return
	}
	s.QueryPort, _ = strconv.Atoi(port)
	if gamePort > 0 && gamePort <= 65535 {
		s.Connect = net.JoinHostPort(host, strconv.Itoa(gamePort))
	}
}

// statusJSON is Status as it is encoded.
type statusJSON Status

// MarshalJSON encodes s with empty lists and objects where s holds nil, as
// GameDig's results always carry them.
func (s Status) MarshalJSON() ([]byte, error) {
	if s.Players == nil {
		s.Players = []Player{}
	}
	if s.Bots == nil {
		s.Bots = []Player{}
	}
	if s.Raw == nil {
		s.Raw = map[string]any{}
	}
	return json.Marshal(statusJSON(s))
}

// Player is one player (or bot) in a Status: a name, and the protocol's
// fields for it (score, ping, time…) under Raw.
type Player struct {
	Name string         `json:"name"`
	Raw  map[string]any `json:"raw"`
}

// playerJSON is Player as it is encoded.
type playerJSON Player

// MarshalJSON encodes p with an empty object for a nil Raw.
func (p Player) MarshalJSON() ([]byte, error) {
	if p.Raw == nil {
		p.Raw = map[string]any{}
	}
	return json.Marshal(playerJSON(p))
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
