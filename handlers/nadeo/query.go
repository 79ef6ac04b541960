// Package nadeo queries Nadeo's dedicated servers (TrackMania Forever,
// TrackMania 2, ShootMania) over their GbxRemote XML-RPC port for the
// game-query gateway.
package nadeo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	wirenadeo "github.com/gamegate/gamegate/wire/nadeo"
)

// MaxCredential bounds the login and the password.
const MaxCredential = 256

// Config is the configuration of the Nadeo query (gamegate.query.nadeo,
// the protocol GameDig calls nadeo: trackmaniaforever, trackmania2,
// shootmania; the query port is the server's XML-RPC port, 5000 by
// default, with xmlrpc enabled in its configuration). A status connects
// over TCP, authenticates with login and password when they are given,
// and calls GetServerOptions, GetCurrentChallengeInfo,
// GetCurrentGameInfo, GetVersion and GetPlayerList on one connection, as
// GameDig does. Command: raw.
type Config struct {
	// attempt_timeout (of the connection and its calls) and retries (each
	// on a new connection).
	query.Attempts
	// max_packets and max_response_size bound what a status reads, over
	// its answers and any callbacks the server sends between them; a
	// message's size field is checked against max_response_size before
	// anything is read or sized for it.
	query.Budget
	// The login of an account of the server's with the access level User
	// or higher (User, Admin or SuperAdmin), sent with Authenticate before
	// the other calls; the servers answer those calls to such an account
	// only. At most 256 bytes. Default: none (no Authenticate call).
	Login string `json:"login,omitempty"`
	// The password of login, at most 256 bytes. It may be an {env.X}
	// placeholder, replaced when the configuration loads, so that the
	// stored configuration does not hold it; it is never logged or
	// answered. Default: none.
	Password string `json:"password,omitempty"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	if err := c.Attempts.Validate(); err != nil {
		return err
	}
	if err := c.Budget.Validate(); err != nil {
		return err
	}
	if err := bounds.First(
		bounds.Int("login", len(c.Login), 0, MaxCredential),
		bounds.Int("password", len(c.Password), 0, MaxCredential)); err != nil {
		var r *bounds.RangeError
		if errors.As(err, &r) {
			return fmt.Errorf("%s: at most %d bytes", r.Name, MaxCredential) // never the value
		}
		return err
	}
	if c.Password != "" && c.Login == "" {
		return errors.New("password: given without a login")
	}
	return nil
}

// Secrets returns the password, for its placeholders to be replaced.
func (c *Config) Secrets() map[string]*string { return map[string]*string{"password": &c.Password} }

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{TCPExchange: c.TCPExchange(), Budget: c.Budget, login: c.Login, password: c.Password}, nil
}

// QueryProtocol is the Nadeo query as a query.Protocol.
type QueryProtocol struct {
	query.TCPExchange
	query.Budget
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time

	login, password string
}

// Name returns "nadeo".
func (p *QueryProtocol) Name() string { return "nadeo" }

// Command answers raw, the status's raw data.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

// ReadOnlyCommands returns raw.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// ErrShape is an answer that is not the type its call returns.
var ErrShape = errors.New("the answer is not of its call's type")

// conversation is one connection's calls and answers within one budget.
type conversation struct {
	conn   net.Conn
	p      *QueryProtocol
	spent  query.Spent
	handle uint32
	buf    []byte
}

func (c *conversation) limit() int {
	if c.p.MaxResponseSize == 0 {
		return query.DefaultMaxResponseSize
	}
	return c.p.MaxResponseSize
}

// handshake reads and checks the server's greeting.
func (c *conversation) handshake() error {
	var prefix [4]byte
	if _, err := io.ReadFull(c.conn, prefix[:]); err != nil {
		return err
	}
	n, err := wirenadeo.HandshakeLen(prefix[:])
	if err != nil {
		return err
	}
	b := make([]byte, 4+n)
	copy(b, prefix[:])
	if _, err := io.ReadFull(c.conn, b[4:]); err != nil {
		return err
	}
	return wirenadeo.CheckHandshake(b)
}

// call calls method and returns its answer's value. Messages that are
// not its answer (callbacks) are read and dropped within the budget. A
// fault is returned as a *wirenadeo.Fault, naming the method.
func (c *conversation) call(method string, params ...any) (any, error) {
	if c.handle == 0 {
		c.handle = wirenadeo.FirstHandle
	} else {
		c.handle++
	}
	xml, err := wirenadeo.AppendCall(c.buf[:0], method, params...)
	if err != nil {
		return nil, err
	}
	msg, err := wirenadeo.AppendMessage(nil, c.handle, xml)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(msg); err != nil {
		return nil, err
	}
	for {
		var h [wirenadeo.HeaderLen]byte
		if _, err := io.ReadFull(c.conn, h[:]); err != nil {
			return nil, err
		}
		size, handle, err := wirenadeo.Header(h[:], c.limit())
		if err != nil {
			return nil, err
		}
		if err := c.p.Spend(&c.spent, wirenadeo.HeaderLen+size); err != nil {
			return nil, err
		}
		c.buf = slices.Grow(c.buf[:0], size)[:size]
		if _, err := io.ReadFull(c.conn, c.buf); err != nil {
			return nil, err
		}
		if handle != c.handle {
			continue // a callback, or an answer to nothing asked
		}
		v, err := wirenadeo.DecodeResponse(c.buf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		return v, nil
	}
}

// object calls method and returns its answer as a struct.
func (c *conversation) object(method string) (map[string]any, error) {
	v, err := c.call(method)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %w", method, ErrShape)
	}
	return m, nil
}

// colours are TrackMania's text formatting codes as GameDig strips them:
// $ and three hex digits (a colour) or a letter.
var colours = regexp.MustCompile(`(?i)\$([0-9a-f]{3}|[a-z])`)

func stripColours(v any) string {
	s, _ := v.(string)
	return colours.ReplaceAllString(s, "")
}

// gameModes are GetCurrentGameInfo's GameMode numbers, as GameDig names
// them.
var gameModes = map[int]string{0: "Rounds", 1: "Time Attack", 2: "Team", 3: "Laps", 4: "Stunts", 5: "Cup"}

// withoutPasswords returns options without the server's passwords (the
// player and spectator passwords, which GetServerOptions answers in clear
// to some accounts): a status is public.
func withoutPasswords(options map[string]any) map[string]any {
	out := make(map[string]any, len(options))
	for k, v := range options {
		if !strings.Contains(strings.ToLower(k), "password") {
			out[k] = v
		}
	}
	return out
}

// Status runs GameDig's calls on one connection and maps their answers
// as GameDig's nadeo protocol does.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var st *query.Status
	err := p.Run(ctx, address, func(conn net.Conn) error {
		s, err := p.converse(conn, address)
		st = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (p *QueryProtocol) converse(conn net.Conn, address string) (*query.Status, error) {
	c := &conversation{conn: conn, p: p}
	if err := c.handshake(); err != nil {
		return nil, err
	}
	st := &query.Status{Protocol: "nadeo", Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{}}
	start := query.Now(p.Now)
	if p.login != "" {
		if _, err := c.call("Authenticate", p.login, p.password); err != nil {
			var f *wirenadeo.Fault
			if errors.As(err, &f) {
				// Neither the login nor its password goes into the
				// error: the fault's text is the server's.
				return nil, fmt.Errorf("Authenticate refused: %w", f)
			}
			return nil, err
		}
	}
	options, err := c.object("GetServerOptions")
	if err != nil {
		return nil, err
	}
	st.Ping = query.Now(p.Now).Sub(start).Milliseconds()
	st.Name = stripColours(options["Name"])
	pw, ok := options["Password"].(string)
	st.Password = !ok || pw != "No password"
	st.MaxPlayers, _ = options["CurrentMaxPlayers"].(int)
	if v, ok := options["CurrentMaxSpectators"]; ok {
		st.Raw["maxspectators"] = v
	}
	st.Raw["GetServerOptions"] = withoutPasswords(options)

	challenge, err := c.object("GetCurrentChallengeInfo")
	if err != nil {
		return nil, err
	}
	st.Map = stripColours(challenge["Name"])
	st.Raw["GetCurrentChallengeInfo"] = challenge

	game, err := c.object("GetCurrentGameInfo")
	if err != nil {
		return nil, err
	}
	mode, _ := game["GameMode"].(int)
	st.Raw["gametype"] = ""
	if name, ok := gameModes[mode]; ok && game["GameMode"] != nil {
		st.Raw["gametype"] = name
	}
	if v, ok := game["NbChallenge"]; ok {
		st.Raw["mapcount"] = v
	}
	st.Raw["GetCurrentGameInfo"] = game

	version, err := c.object("GetVersion")
	if err != nil {
		return nil, err
	}
	st.Version, _ = version["Version"].(string)
	st.Raw["GetVersion"] = version

	list, err := c.call("GetPlayerList", 10000, 0)
	if err != nil {
		return nil, err
	}
	players, ok := list.([]any)
	if !ok {
		return nil, fmt.Errorf("GetPlayerList: %w", ErrShape)
	}
	st.Raw["players"] = players
	for _, e := range players {
		pl, _ := e.(map[string]any)
		name := pl["Name"]
		if s, _ := name.(string); s == "" {
			name = pl["NickName"]
		}
		st.Players = append(st.Players, query.Player{Name: stripColours(name), Raw: map[string]any{}})
	}
	st.NumPlayers = len(st.Players)
	gamePort := 0
	if _, port, _ := net.SplitHostPort(address); port == "5000" {
		gamePort = 2350 // GameDig's guess for the default XML-RPC port
	}
	st.SetAddress(address, gamePort)
	return st, nil
}
