// Package gamespy2 queries GameSpy 2 servers for the game-query gateway.
package gamespy2

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire"
	wiregs2 "github.com/gamegate/gamegate/wire/gamespy2"
)

// Config is the configuration of the GameSpy 2 query
// (gamegate.query.gamespy2, game_query's gamespy2: America's Army, Halo,
// Battlefield Vietnam, SWAT 4, Neverwinter Nights, Star Wars: Battlefront
// and the other games GameDig reads with its gamespy2 protocol). A status
// asks the server's keys, its players and its teams, one request each;
// text is read as Windows-1252. Command: raw.
type Config struct {
	// attempt_timeout and retries (of each of the three requests).
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

// QueryProtocol is GameSpy 2 as a query.Protocol.
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "gamespy2".
func (p *QueryProtocol) Name() string { return "gamespy2" }

// ask sends the request for section with a random ID and returns the
// body of the answer carrying it, copied.
func (p *QueryProtocol) ask(ctx context.Context, address string, section int) ([]byte, error) {
	var raw [4]byte
	_, _ = rand.Read(raw[:])
	id := binary.BigEndian.Uint32(raw[:])
	var body []byte
	err := p.Exchange(ctx, address, wiregs2.AppendRequest(nil, id, section), func(d []byte) (bool, error) {
		got, b, ok := wiregs2.Answer(d)
		if !ok || got != id {
			return false, nil // not this request's answer
		}
		body = slices.Clone(b)
		return true, nil
	})
	return body, err
}

func text(b []byte) string { return string(wire.AppendWindows1252(nil, b)) }

// numericFields are the fields GameDig reads as integers (an empty one
// is left out).
var numericFields = []string{"score", "deaths", "ping", "team", "kills", "tickets"}

// units reads a table as GameDig's readFieldData does: one object per
// row, its field names without their trailing _, player and team_t as
// name, tickets_t as tickets, numbers as numbers.
func units(body []byte) ([]map[string]any, error) {
	var t wiregs2.Table
	if err := t.Decode(body); err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, t.Rows())
	for i := range t.Rows() {
		row := t.Row(i)
		u := make(map[string]any, len(row))
		for i, v := range row {
			key := strings.TrimSuffix(text(t.Fields[i]), "_")
			switch key {
			case "player", "team_t":
				key = "name"
			case "tickets_t":
				key = "tickets"
			}
			if slices.Contains(numericFields, key) {
				if len(v) == 0 {
					continue
				}
				u[key] = query.ParseInt(text(v))
				continue
			}
			u[key] = text(v)
		}
		out = append(out, u)
	}
	return out, nil
}

// Status asks the server's keys, players and teams, and maps them as
// GameDig's gamespy2 does.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	start := query.Now(p.Now)
	info, err := p.ask(ctx, address, wiregs2.SectionInfo)
	if err != nil {
		return nil, err
	}
	rtt := query.Now(p.Now).Sub(start)
	pairs, err := wiregs2.DecodeInfo(nil, info)
	if err != nil {
		return nil, query.Upstream(address, err)
	}
	raw := make(map[string]any, len(pairs)+1)
	for _, kv := range pairs {
		raw[text(kv.Key)] = text(kv.Value)
	}
	st := &query.Status{Protocol: "gamespy2", Ping: rtt.Milliseconds(), Raw: raw, Players: []query.Player{}, Bots: []query.Player{}}
	s := func(k string) (string, bool) { v, ok := raw[k].(string); return v, ok }
	if v, ok := s("hostname"); ok {
		st.Name = v
	}
	pw, _ := s("password")
	st.Password = query.TrueTest(pw)
	gamePort := query.GameSpyKeys(st, raw)

	body, err := p.ask(ctx, address, wiregs2.SectionPlayers)
	if err != nil {
		return nil, err
	}
	players, err := units(body)
	if err != nil {
		return nil, query.Upstream(address, err)
	}
	for _, u := range players {
		name, _ := u["name"].(string)
		delete(u, "name")
		st.Players = append(st.Players, query.Player{Name: name, Raw: u})
	}
	if v, ok := s("numplayers"); ok {
		st.NumPlayers = query.ParseInt(v)
	} else {
		st.NumPlayers = len(st.Players)
	}

	if body, err = p.ask(ctx, address, wiregs2.SectionTeams); err != nil {
		return nil, err
	}
	teams, err := units(body)
	if err != nil {
		return nil, query.Upstream(address, err)
	}
	raw["teams"] = teams
	if raw["gamename"] == "armygame" {
		stripArmyColours(st)
	}
	st.SetAddress(address, gamePort)
	return st, nil
}

// stripArmyColours removes America's Army's colour codes (Unreal 2's: ESC
// and three bytes of colour) and the other control characters below ESC
// from the name, the map, the text values of raw and the players' names,
// as GameDig does for the games whose gamename is armygame.
func stripArmyColours(st *query.Status) {
	st.Name, st.Map = stripColours(st.Name), stripColours(st.Map)
	for k, v := range st.Raw {
		if s, ok := v.(string); ok {
			st.Raw[k] = stripColours(s)
		}
	}
	for i := range st.Players {
		st.Players[i].Name = stripColours(st.Players[i].Name)
	}
}

// stripColours removes each ESC followed by three characters other than
// line breaks, and each character from U+0000 to U+001A.
func stripColours(s string) string {
	r := []rune(s)
	out := make([]rune, 0, len(r))
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == 0x1b && i+3 < len(r) && !slices.ContainsFunc(r[i+1:i+4], isLineBreak):
			i += 3
		case r[i] <= 0x1a:
		default:
			out = append(out, r[i])
		}
	}
	return string(out)
}

// isLineBreak reports whether r is a line terminator, which JavaScript's
// . does not match.
func isLineBreak(r rune) bool { return r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029 }

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw: the status's raw data.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var _ query.ProtocolConfig = (*Config)(nil)
