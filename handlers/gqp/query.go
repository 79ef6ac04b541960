package gqp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// HTTPStatus maps a GQP status code to the HTTP status of the gateway's
// answer.
func HTTPStatus(s wiregqp.Status) int {
	switch s {
	case wiregqp.StatusOK:
		return http.StatusOK
	case wiregqp.StatusUnknownCommand:
		return http.StatusNotFound
	case wiregqp.StatusUnsupportedFeature, wiregqp.StatusUnsupportedEncoding:
		return http.StatusNotImplemented
	case wiregqp.StatusWrongArgCount, wiregqp.StatusInvalidArgument:
		return http.StatusBadRequest
	case wiregqp.StatusDisabled, wiregqp.StatusUnauthorised:
		return http.StatusForbidden
	case wiregqp.StatusUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway // 41 and anything undefined
}

// RecordJSON is a record as the gateway answers it.
type RecordJSON struct {
	Type  string   `json:"type"` // string, pair, list, labeled
	Name  string   `json:"name,omitempty"`
	Value *string  `json:"value,omitempty"`
	Items []string `json:"items,omitempty"`
}

// ReplyJSON is one command's answer as the gateway sends it.
type ReplyJSON struct {
	Command    string       `json:"command"`
	Status     int          `json:"status"`
	StatusText string       `json:"status_text"`
	Kind       string       `json:"kind"` // empty, text, records
	Text       *string      `json:"text,omitempty"`
	Records    []RecordJSON `json:"records,omitempty"`
}

// ToJSON converts a reply (copying its bytes, which alias a datagram).
func ToJSON(r *wiregqp.Reply) ReplyJSON {
	out := ReplyJSON{Command: string(r.Name), Status: int(r.Status), StatusText: r.Status.String(), Kind: r.Kind.String()}
	switch r.Kind {
	case wiregqp.ReplyText:
		t := string(r.Text)
		out.Text = &t
	case wiregqp.ReplyRecords:
		out.Records = make([]RecordJSON, len(r.Records))
		for i := range r.Records {
			rec := &r.Records[i]
			j := RecordJSON{Type: rec.Kind.String()}
			switch rec.Kind {
			case wiregqp.RecordString, wiregqp.RecordPair:
				v := string(rec.Value())
				j.Value = &v
				j.Name = string(rec.Label)
			default:
				j.Name = string(rec.Label)
				j.Items = make([]string, len(rec.Items))
				for k, it := range rec.Items {
					j.Items[k] = string(it)
				}
			}
			out.Records[i] = j
		}
	}
	return out
}

// QueryProtocol is GQP as a query.Protocol: commands are sent as they are,
// and a server's status comes from identify plus an optional status command
// whose name/value records and labeled lists fill the normalised fields
// (a "players" list the people, a "bots" list the bots, a "gameport" or
// "hostport" pair the port of connect).
type QueryProtocol struct {
	Client *Client
	// StatusCommand is the command whose answer describes the server's
	// state (hostname, map, numplayers, maxplayers, a "players" list).
	// Empty: identify only.
	StatusCommand string
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "gqp".
func (p *QueryProtocol) Name() string { return "gqp" }

// ReadOnlyCommands returns the required commands that only read (identify,
// echo, extensions) and the status command. challenge and validate are
// never among them, nor any custom command but the status command: whether
// a game's own command is harmless only its configuration can say.
func (p *QueryProtocol) ReadOnlyCommands() []string {
	cmds := []string{"identify", "echo", "extensions"}
	if p.StatusCommand != "" {
		cmds = append(cmds, p.StatusCommand)
	}
	return cmds
}

func (p *QueryProtocol) now() time.Time { return query.Now(p.Now) }

func (p *QueryProtocol) ask(ctx context.Context, address string, q *wiregqp.Query) (*wiregqp.Response, error) {
	resp, err := p.Client.Query(ctx, address, q)
	if err == nil {
		// A single nameless reply is the server's verdict on the whole
		// query (40 or 41): it could not read it.
		if r := &resp.Replies[0]; len(resp.Replies) != len(q.Commands) || len(r.Name) == 0 && r.Status != wiregqp.StatusOK {
			return nil, &query.Error{HTTPStatus: HTTPStatus(r.Status), ProtocolStatus: int(r.Status),
				Message: "the game server refused the query: " + strconv.Itoa(int(r.Status)) + " (" + r.Status.String() + ")"}
		}
		return resp, nil
	}
	var pe *ProtocolError
	switch {
	case errors.Is(err, ErrTimeout):
		return nil, query.Timeout(address)
	case errors.As(err, &pe):
		return nil, query.Upstream(address, pe.Err)
	}
	return nil, query.Failure(address, err)
}

// Command sends one command and returns its reply as JSON; a reply with an
// error status becomes a *query.Error carrying the server's text.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	if err := validString(command); err != nil || command == "" {
		return nil, query.Errorf(http.StatusBadRequest, "command name %q cannot be sent over GQP", command)
	}
	for i, a := range args {
		if err := validString(a); err != nil {
			return nil, query.Errorf(http.StatusBadRequest, "argument %d cannot be sent over GQP: %v", i+1, err)
		}
	}
	q := wiregqp.QueryOf(command, args...)
	if _, err := q.AppendTo(nil); err != nil {
		// Too many arguments, or too long a query: the request's fault.
		return nil, query.Errorf(http.StatusBadRequest, "the command cannot be sent over GQP: %v", err)
	}
	resp, err := p.ask(ctx, address, q)
	if err != nil {
		return nil, err
	}
	r := &resp.Replies[0]
	j := ToJSON(r)
	if r.Status != wiregqp.StatusOK {
		msg := "the game server answered " + strconv.Itoa(int(r.Status)) + " (" + r.Status.String() + ")"
		if j.Text != nil && *j.Text != "" {
			msg += ": " + *j.Text
		}
		return nil, &query.Error{HTTPStatus: HTTPStatus(r.Status), ProtocolStatus: int(r.Status), Message: msg}
	}
	return j, nil
}

// validString checks that s can be a GQP string.
func validString(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7F {
			return errors.New("control characters are not allowed")
		}
	}
	return nil
}

// Status asks identify (and the status command, in the same query).
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	q := new(wiregqp.Query)
	q.Add([]byte("identify"))
	if p.StatusCommand != "" {
		q.Add([]byte(p.StatusCommand))
	}
	start := p.now()
	resp, err := p.ask(ctx, address, q)
	if err != nil {
		return nil, err
	}
	st := &query.Status{Protocol: "gqp", Ping: p.now().Sub(start).Milliseconds(), Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{}}
	gamePort := 0
	for i := range resp.Replies {
		r := &resp.Replies[i]
		st.Raw[string(r.Name)] = ToJSON(r)
		if r.Status != wiregqp.StatusOK {
			if i == 0 {
				return nil, &query.Error{HTTPStatus: HTTPStatus(r.Status), ProtocolStatus: int(r.Status),
					Message: "the game server answered identify with " + strconv.Itoa(int(r.Status)) + " (" + r.Status.String() + ")"}
			}
			continue
		}
		for k := range r.Records {
			rec := &r.Records[k]
			label := strings.ToLower(string(rec.Label))
			switch rec.Kind {
			case wiregqp.RecordPair:
				v := string(rec.Value())
				switch label {
				case "hostname", "name", "servername":
					st.Name = v
				case "map", "mapname":
					st.Map = v
				case "gamever", "version":
					if st.Version == "" || label == "version" {
						st.Version = v
					}
				case "numplayers", "players":
					st.NumPlayers, _ = strconv.Atoi(v)
				case "maxplayers":
					st.MaxPlayers, _ = strconv.Atoi(v)
				case "password", "passworded":
					st.Password = v == "1" || strings.EqualFold(v, "true") || strings.EqualFold(v, "yes")
				case "gameport", "hostport":
					gamePort, _ = strconv.Atoi(v)
				}
			case wiregqp.RecordLabeled, wiregqp.RecordList:
				switch {
				case label == "players" || rec.Kind == wiregqp.RecordList && p.StatusCommand == "players":
					for _, it := range rec.Items {
						st.Players = append(st.Players, query.Player{Name: string(it)})
					}
				case label == "bots":
					for _, it := range rec.Items {
						st.Bots = append(st.Bots, query.Player{Name: string(it)})
					}
				}
			}
		}
	}
	if st.NumPlayers == 0 {
		st.NumPlayers = len(st.Players) + len(st.Bots)
	}
	st.SetAddress(address, gamePort)
	return st, nil
}
