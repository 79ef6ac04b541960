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
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"
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

// ErrorType names the cause of a failure in an error answer's
// error.type. The values are stable: clients may switch on them.
type ErrorType string

// The error types. The first six are about the game server asked; the rest
// about the request.
const (
	// TypeRefused: the game server's host answered that nothing listens
	// on the port (TCP connection refused, or an ICMP port unreachable on
	// UDP). Answered at once, 502.
	TypeRefused ErrorType = "refused"
	// TypeTimeout: no answer within the query timeout, after every
	// retry. 504.
	TypeTimeout ErrorType = "timeout"
	// TypeBadAnswer: the game server answered with something that is not
	// an answer of its protocol, or could not be used. 502.
	TypeBadAnswer ErrorType = "bad_answer"
	// TypeUnresolved: the game server's host name does not resolve. 502.
	TypeUnresolved ErrorType = "unresolved"
	// TypeUnreachable: the game server could not be queried for another
	// reason of the network (no route, no socket). 502.
	TypeUnreachable ErrorType = "unreachable"
	// TypeServerError: the game server answered with an error of its own
	// (a GQP status); protocol_status carries its code. The HTTP status
	// is the one that code maps to.
	TypeServerError ErrorType = "server_error"
	// TypeLimited: a rate or concurrency limit of this gateway refused
	// the request; Retry-After says when to try again. 429 or 503.
	TypeLimited ErrorType = "limited"
	// TypeNotFound: no such game server or command. 404.
	TypeNotFound ErrorType = "not_found"
	// TypeForbidden: the server or command may not be asked from here. 403.
	TypeForbidden ErrorType = "forbidden"
	// TypeBadRequest: the request is malformed. 400.
	TypeBadRequest ErrorType = "bad_request"
	// TypeMethodNotAllowed: a method the path does not take; see Allow. 405.
	TypeMethodNotAllowed ErrorType = "method_not_allowed"
	// TypeTooLarge: the request asks too much at once. 413.
	TypeTooLarge ErrorType = "too_large"
	// TypeUnsupported: the game asked about needs a query protocol this
	// gateway does not speak; the message names it. 501.
	TypeUnsupported ErrorType = "unsupported"
	// TypeInternal: the gateway failed; the detail is in its log. 500.
	TypeInternal ErrorType = "internal"
)

// Error is a failure with the HTTP status it maps to and a message that
// says what happened in words.
type Error struct {
	HTTPStatus int
	// Type is the failure's cause; TypeOf(HTTPStatus) when empty.
	Type ErrorType
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

// Kind is e's Type, or the type its HTTP status implies.
func (e *Error) Kind() ErrorType {
	switch {
	case e.Type != "":
		return e.Type
	case e.ProtocolStatus != 0:
		return TypeServerError
	}
	return TypeOf(e.HTTPStatus)
}

// TypeOf is the error type an HTTP status implies when nothing more
// precise is known.
func TypeOf(status int) ErrorType {
	switch status {
	case http.StatusBadRequest:
		return TypeBadRequest
	case http.StatusForbidden:
		return TypeForbidden
	case http.StatusNotFound:
		return TypeNotFound
	case http.StatusMethodNotAllowed:
		return TypeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return TypeTooLarge
	case http.StatusNotImplemented:
		return TypeUnsupported
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return TypeLimited
	case http.StatusGatewayTimeout:
		return TypeTimeout
	case http.StatusBadGateway:
		return TypeUnreachable
	}
	return TypeInternal
}

// Errorf returns an *Error of the type its status implies (TypeOf).
func Errorf(status int, format string, args ...any) *Error {
	return &Error{HTTPStatus: status, Message: fmt.Sprintf(format, args...)}
}

// Timeout is the error for a server that did not answer.
func Timeout(address string) *Error {
	return &Error{HTTPStatus: http.StatusGatewayTimeout, Type: TypeTimeout, Message: "the game server did not answer in time",
		Detail: fmt.Errorf("%s: no answer in time", address)}
}

// Upstream is the error for a server whose answer was unusable. err says
// what was wrong with the answer, in the protocol's words, and is sent to
// the client: never pass a socket or operating-system error here (use
// Failure).
//
// The game server may choose the text of err (a fault string it sent): the
// answer carries at most MaxUpstreamText bytes of it, the log all of it.
func Upstream(address string, err error) *Error {
	return &Error{HTTPStatus: http.StatusBadGateway, Type: TypeBadAnswer, Message: "the game server sent an answer that could not be used: " + shortText(err.Error(), MaxUpstreamText),
		Detail: fmt.Errorf("%s: unusable answer: %w", address, err)}
}

// MaxUpstreamText bounds the bytes of an unusable answer's reason that an
// HTTP answer carries.
const MaxUpstreamText = 256

// shortText is s cut to at most n bytes on a character boundary, with an
// ellipsis when cut.
func shortText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Unreachable is the error for a server that could not be queried at all;
// err is logged, not sent. Failure tells its causes apart.
func Unreachable(address string, err error) *Error {
	return &Error{HTTPStatus: http.StatusBadGateway, Type: TypeUnreachable, Message: "the game server could not be queried",
		Detail: fmt.Errorf("%s: %w", address, err)}
}

// Failure maps the error of querying address to an *Error of its cause:
// an *Error stays as it is; no answer in time (ErrNoAnswer, a deadline, a
// network timeout, ctx ending) is TypeTimeout, a refused port (TCP or an
// ICMP port unreachable on a connected UDP socket) TypeRefused, a host name
// that does not resolve TypeUnresolved, anything else TypeUnreachable. The
// client is told the cause in words; err, with the address, is the detail
// for the log.
func Failure(address string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{HTTPStatus: http.StatusBadGateway, Type: TypeBadAnswer,
			Message: "the game server closed the connection before it answered",
			Detail:  fmt.Errorf("%s: %w", address, err)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &Error{HTTPStatus: http.StatusBadGateway, Type: TypeRefused,
			Message: "the game server refused the query: nothing listens on its port",
			Detail:  fmt.Errorf("%s: refused: %w", address, err)}
	case errors.As(err, &dns) && !dns.IsTimeout:
		return &Error{HTTPStatus: http.StatusBadGateway, Type: TypeUnresolved,
			Message: "the game server's host name does not resolve",
			Detail:  fmt.Errorf("%s: %w", address, err)}
	case errors.Is(err, ErrNoAnswer), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		e := Timeout(address)
		e.Detail = fmt.Errorf("%s: no answer in time: %w", address, err)
		return e
	}
	return Unreachable(address, err)
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
