// Package battlefield queries Frostbite game servers (Battlefield: Bad
// Company 2, 3, 4, Hardline, Medal of Honor 2010 and Warfighter) over
// their remote administration port for the game-query gateway.
package battlefield

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire"
	wirebf "github.com/gamegate/gamegate/wire/battlefield"
)

// Config is the configuration of the Frostbite query
// (gamegate.query.battlefield, the protocol GameDig calls battlefield:
// bbc2, battlefield3, battlefield4, battlefieldhardline, moh and mohw;
// the query port is the server's remote administration port, usually
// 48888 or the game port plus 22000).
// A status connects over TCP and asks serverInfo, version and
// "listPlayers all" on one connection, none of which needs a login; text
// is read as ISO-8859-1. Command: raw.
type Config struct {
	// attempt_timeout (of the connection and its three requests) and
	// retries (each on a new connection).
	query.Attempts
	// max_packets and max_response_size bound what a status reads, over
	// its three answers and any event packets the server sends between
	// them; a packet's size field is checked against max_response_size
	// before anything is read or sized for it.
	query.Budget
}

// Validate checks the options.
func (c *Config) Validate() error {
	if err := c.Attempts.Validate(); err != nil {
		return err
	}
	return c.Budget.Validate()
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{TCPExchange: c.TCPExchange(), Budget: c.Budget}, nil
}

// QueryProtocol is the Frostbite query as a query.Protocol.
type QueryProtocol struct {
	query.TCPExchange
	query.Budget
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "battlefield".
func (p *QueryProtocol) Name() string { return "battlefield" }

// Command answers raw, the status's raw data.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

// ReadOnlyCommands returns raw.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Errors of an answer that cannot be used.
var (
	// ErrNotOK is an answer whose status word is not "OK".
	ErrNotOK = errors.New("the server refused the request")
	// ErrShort is an answer with fewer words than its layout needs.
	ErrShort = errors.New("the answer ends before its fields")
)

// conversation is one connection's requests and answers within one
// budget.
type conversation struct {
	conn  net.Conn
	p     *QueryProtocol
	spent query.Spent
	seq   uint32
	buf   []byte
	pkt   wirebf.Packet
}

// ask sends a request and returns the words of its answer after "OK",
// valid until the next ask. Packets that are not its answer (events the
// server sends on its own, Venice Unleashed's among them) are read and
// dropped within the budget.
func (c *conversation) ask(words ...string) ([][]byte, error) {
	c.seq++
	req, err := wirebf.AppendRequest(c.buf[:0], c.seq, words...)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(req); err != nil {
		return nil, err
	}
	limit := c.p.MaxResponseSize
	if limit == 0 {
		limit = query.DefaultMaxResponseSize
	}
	for {
		var prefix [wirebf.PrefixLen]byte
		if _, err := io.ReadFull(c.conn, prefix[:]); err != nil {
			return nil, err
		}
		size, err := wirebf.Size(prefix[:], limit)
		if err != nil {
			return nil, err
		}
		if err := c.p.Spend(&c.spent, size); err != nil {
			return nil, err
		}
		c.buf = slices.Grow(c.buf[:0], size)[:size]
		copy(c.buf, prefix[:])
		if _, err := io.ReadFull(c.conn, c.buf[wirebf.PrefixLen:]); err != nil {
			return nil, err
		}
		if err := c.pkt.Decode(c.buf); err != nil {
			return nil, err
		}
		if !c.pkt.Response || c.pkt.FromServer || c.pkt.Sequence != c.seq {
			continue
		}
		if len(c.pkt.Words) == 0 || string(c.pkt.Words[0]) != "OK" {
			status := ""
			if len(c.pkt.Words) > 0 {
				status = text(c.pkt.Words[0])
			}
			return nil, fmt.Errorf("%w to %s: %q", ErrNotOK, words[0], status)
		}
		return c.pkt.Words[1:], nil
	}
}

func text(b []byte) string { return string(wire.AppendLatin1(nil, b)) }

// words reads an answer's words in order, as GameDig's shift() does.
type words [][]byte

func (w *words) more() bool { return len(*w) > 0 }

func (w *words) next() string {
	if len(*w) == 0 {
		return ""
	}
	s := text((*w)[0])
	*w = (*w)[1:]
	return s
}

// Status asks serverInfo, version and the players on one connection and
// maps them as GameDig's battlefield protocol does.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var st *query.Status
	err := p.Run(ctx, address, func(conn net.Conn) error {
		c := &conversation{conn: conn, p: p}
		start := query.Now(p.Now)
		info, err := c.ask("serverInfo")
		if err != nil {
			return err
		}
		rtt := query.Now(p.Now).Sub(start)
		s, err := serverInfo(words(info), address)
		if err != nil {
			return err
		}
		s.Ping = rtt.Milliseconds()
		v, err := c.ask("version")
		if err != nil {
			return err
		}
		vw := words(v)
		vw.next()
		s.Version = vw.next()
		pl, err := c.ask("listPlayers", "all")
		if err != nil {
			return err
		}
		if s.Players, err = players(words(pl)); err != nil {
			return err
		}
		st = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// fixedInfo is how many words serverInfo has before its teams and after
// them (target score, online state): every Frostbite game sends these.
const fixedInfo, afterTeams = 7, 2

// serverInfo maps serverInfo's words: the fixed fields, then the optional
// ones each server version ends at a different place.
func serverInfo(w words, address string) (*query.Status, error) {
	if len(w) < fixedInfo+afterTeams {
		return nil, fmt.Errorf("serverInfo: %w", ErrShort)
	}
	st := &query.Status{Protocol: "battlefield", Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{}}
	st.Name = w.next()
	st.NumPlayers = query.ParseInt(w.next())
	st.MaxPlayers = query.ParseInt(w.next())
	st.Raw["gametype"] = w.next()
	st.Map = w.next()
	st.Raw["roundsplayed"] = query.ParseInt(w.next())
	st.Raw["roundstotal"] = query.ParseInt(w.next())
	teams := query.ParseInt(w.next())
	if teams < 0 || teams > len(w)-afterTeams {
		return nil, fmt.Errorf("serverInfo: %d teams: %w", teams, ErrShort)
	}
	ts := make([]any, 0, teams)
	for range teams {
		ts = append(ts, map[string]any{"tickets": query.ParseFloat(w.next())})
	}
	st.Raw["teams"] = ts
	st.Raw["targetscore"] = query.ParseInt(w.next())
	st.Raw["status"] = w.next()
	flag := func(key string) {
		if w.more() {
			st.Raw[key] = w.next() == "true"
		}
	}
	number := func(key string) {
		if w.more() {
			st.Raw[key] = query.ParseInt(w.next())
		}
	}
	flag("ranked")
	flag("punkbuster")
	if w.more() {
		st.Password = w.next() == "true"
	}
	number("uptime")
	number("roundtime")
	// Bad Company 2 names its game mod next, then a field of its own.
	if w.more() && (string(w[0]) == "BC2" || string(w[0]) == "VIETNAM") {
		w.next()
		w.next()
	}
	gamePort := 0
	if w.more() {
		ip := w.next()
		st.Raw["ip"] = ip
		if _, port, ok := strings.Cut(ip, ":"); ok {
			gamePort = query.ParseInt(port)
		}
	} else {
		gamePort = defaultGamePort(address)
	}
	// The game port is the one the server names; its host is the one
	// asked, not the address a server reports of itself (often a private
	// or unspecified one).
	st.SetAddress(address, gamePort)
	if w.more() {
		st.Raw["punkbusterversion"] = w.next()
	}
	flag("joinqueue")
	for _, key := range []string{"region", "pingsite", "country"} {
		if w.more() {
			st.Raw[key] = w.next()
		}
	}
	flag("quickmatch")
	return st, nil
}

// defaultGamePort is GameDig's guess of the game port of a server that
// does not name it, from the default query ports of Medal of Honor and
// Battlefield 3.
func defaultGamePort(address string) int {
	_, port, _ := net.SplitHostPort(address)
	switch port {
	case "48888":
		return 7673
	case "22000":
		return 25200
	}
	return 0
}

// numericFields are the player fields GameDig reads as integers.
var numericFields = []string{"kills", "deaths", "score", "rank", "team", "squad", "ping", "type"}

// MaxFields bounds the fields of a player list, beyond which an answer
// is refused: Frostbite games send ten or fewer.
const MaxFields = 64

// players maps "listPlayers all": a field count, the field names, a
// player count, then each player's values in field order.
func players(w words) ([]query.Player, error) {
	nf := query.ParseInt(w.next())
	if nf < 0 || nf > MaxFields || nf > len(w) {
		return nil, fmt.Errorf("listPlayers: %d fields: %w", nf, ErrShort)
	}
	fields := make([]string, nf)
	for i := range fields {
		switch f := w.next(); f {
		case "teamId":
			fields[i] = "team"
		case "squadId":
			fields[i] = "squad"
		default:
			fields[i] = f
		}
	}
	n := query.ParseInt(w.next())
	if n < 0 || (nf == 0 && n > 0) || (nf > 0 && n > len(w)/nf) {
		return nil, fmt.Errorf("listPlayers: %d players: %w", n, ErrShort)
	}
	out := make([]query.Player, 0, n)
	for range n {
		pl := query.Player{Raw: make(map[string]any, nf)}
		for _, f := range fields {
			v := w.next()
			switch {
			case f == "name":
				pl.Name = v
			case slices.Contains(numericFields, f):
				pl.Raw[f] = query.ParseInt(v)
			default:
				pl.Raw[f] = v
			}
		}
		out = append(out, pl)
	}
	return out, nil
}
