// Package gamespy3 queries GameSpy 3 (and GameSpy 4) servers for the
// game-query gateway.
package gamespy3

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/wire"
	wiregs3 "github.com/gamegate/gamegate/wire/gamespy3"
)

// Config is the configuration of the GameSpy 3 query
// (gamegate.query.gamespy3, game_query's gamespy3: Battlefield 2 and 2142,
// Crysis, Crysis Wars, Crysis 2, Project Reality, S.T.A.L.K.E.R., and
// Minecraft's enable-query, which is GameSpy 4). A status asks the
// challenge (a server answering 0 wants none), then the full status with
// the player list, gathered from every part. Command: raw.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
	// max_packets and max_response_size.
	query.Budget
	// The text encoding of the server's answers: windows-1252, or utf-8
	// (Minecraft). Default: windows-1252.
	Encoding string `json:"encoding,omitempty"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	var enc error
	if c.Encoding != "" && c.Encoding != "windows-1252" && c.Encoding != "utf-8" {
		enc = errors.New(`encoding must be windows-1252 or utf-8, not "` + c.Encoding + `"`)
	}
	return bounds.First(c.Attempts.Validate(), c.Budget.Validate(), enc)
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange(), Budget: c.Budget, UTF8: c.Encoding == "utf-8"}, nil
}

// JC2MPConfig is the configuration of Just Cause 2 Multiplayer's query
// (gamegate.query.jc2mp, game_query's jc2mp; GameDig's jc2mp): GameSpy 3
// with the game's own player list (names, Steam IDs, pings) in one
// datagram, its text UTF-8. Command: raw.
type JC2MPConfig struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *JC2MPConfig) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange(), JC2MP: true, UTF8: true}, nil
}

// QueryProtocol is GameSpy 3 as a query.Protocol.
type QueryProtocol struct {
	query.UDPExchange
	// Budget bounds one answer: its datagrams and their bytes together.
	Budget query.Budget
	// UTF8 reads text as UTF-8 instead of Windows-1252.
	UTF8 bool
	// JC2MP asks and reads Just Cause 2 Multiplayer's variant: its own
	// player list, in the first datagram of the answer alone.
	JC2MP bool
	Now   func() time.Time
}

// Name returns "gamespy3", or "jc2mp".
func (p *QueryProtocol) Name() string {
	if p.JC2MP {
		return "jc2mp"
	}
	return "gamespy3"
}

// ask gets the challenge, then the status's parts in order.
func (p *QueryProtocol) ask(ctx context.Context, address string) ([][]byte, time.Duration, error) {
	var sid [4]byte
	_, _ = rand.Read(sid[:])
	session := binary.BigEndian.Uint32(sid[:]) & 0x0F0F0F0F // GameSpy 4 servers keep the low nibbles
	var challenge int32
	start := query.Now(p.Now)
	err := p.Exchange(ctx, address, wiregs3.AppendRequest(nil, wiregs3.TypeChallenge, session, 0, false), func(d []byte) (bool, error) {
		if typ, s, ok := wiregs3.Peek(d); !ok || typ != wiregs3.TypeChallenge || s != session {
			return false, nil
		}
		var err error
		challenge, err = wiregs3.Challenge(d)
		return err == nil, err
	})
	if err != nil {
		return nil, 0, err
	}
	rtt := query.Now(p.Now).Sub(start)
	parts := map[int][]byte{}
	total := 0
	var spent query.Spent
	req := wiregs3.AppendRequest(nil, wiregs3.TypeStatus, session, challenge, challenge != 0)
	if p.JC2MP {
		req = wiregs3.AppendJC2MPRequest(nil, session, challenge, challenge != 0)
	}
	err = p.Exchange(ctx, address, req, func(d []byte) (bool, error) {
		if typ, s, ok := wiregs3.Peek(d); !ok || typ != wiregs3.TypeStatus || s != session {
			return false, nil
		}
		n, last, body, err := wiregs3.Part(d)
		if err != nil {
			return false, nil
		}
		if _, dup := parts[n]; dup {
			return false, nil
		}
		if err := p.Budget.Spend(&spent, len(body)); err != nil {
			return false, err
		}
		if p.JC2MP { // its part numbers mean nothing: the first is the answer
			n, last = 0, true
		}
		parts[n] = slices.Clone(body)
		if last {
			total = n + 1
		}
		return total != 0 && len(parts) == total, nil
	})
	if err != nil {
		return nil, 0, err
	}
	list := make([][]byte, total)
	for i := range list {
		if list[i] = parts[i]; list[i] == nil {
			return nil, 0, query.Upstream(address, errors.New("a part of the answer is missing"))
		}
	}
	return list, rtt, nil
}

func (p *QueryProtocol) text(b []byte) string {
	if p.UTF8 {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(wire.AppendWindows1252(nil, b))
}

// Status asks the server's status: GameDig's result for the same answer.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	parts, rtt, err := p.ask(ctx, address)
	if err != nil {
		return nil, err
	}
	read := p.readColumns
	if p.JC2MP {
		read = p.readJC2MP
	}
	raw, players, err := read(parts)
	if err != nil {
		return nil, query.Upstream(address, err)
	}
	st := &query.Status{Protocol: p.Name(), Ping: rtt.Milliseconds(), Players: players, Bots: []query.Player{}, Raw: raw}
	s := func(k string) (string, bool) { v, ok := raw[k].(string); return v, ok }
	if v, ok := s("hostname"); ok {
		st.Name = v
	} else if v, ok := s("servername"); ok {
		st.Name = v
	}
	st.Password = raw["password"] == "1"
	gamePort := query.GameSpyKeys(st, raw)
	if p.JC2MP {
		st.Version, _ = s("version")
	}
	if v, ok := s("numplayers"); ok {
		st.NumPlayers = query.ParseInt(v)
	} else {
		st.NumPlayers = len(st.Players)
	}
	st.SetAddress(address, gamePort)
	return st, nil
}

// MaxEmptyItems bounds the items of an answer's playerTeamInfo that its
// columns leave empty, all item types together: a column's offset (up to
// 255) past the items so far makes the items between. So the items an
// answer makes are at most its values and MaxEmptyItems.
const MaxEmptyItems = 256

var errTooManyEmptyItems = errors.New("the answer's columns leave more than 256 items empty")

// readColumns reads the parts' keys and columns: raw, with the columns
// by item type under playerTeamInfo, and the players' column.
func (p *QueryProtocol) readColumns(parts [][]byte) (map[string]any, []query.Player, error) {
	raw := map[string]any{}
	info := map[string][]map[string]any{} // playerTeamInfo by item type
	var body wiregs3.Body
	empty := 0 // items made only to reach a column's offset
	for i, part := range parts {
		if err := body.Decode(part, i == 0); err != nil {
			return nil, nil, err
		}
		for _, kv := range body.Pairs {
			raw[p.text(kv.Key)] = p.text(kv.Value)
		}
		for _, c := range body.Columns {
			name, itemType, ok := strings.Cut(p.text(c.Name), "_")
			if !ok {
				itemType = "no_"
			}
			items := info[itemType]
			for j, v := range body.ColumnValues(c) {
				at := c.Offset + j
				if gap := at - len(items); gap > 0 {
					// GameDig fills the gap with empty items; an answer
					// of one-value columns, each of its own item type at
					// offset 255, would make 256 of them per 8 bytes.
					if empty += gap; empty > MaxEmptyItems {
						return nil, nil, errTooManyEmptyItems
					}
				}
				for len(items) <= at {
					items = append(items, map[string]any{})
				}
				items[at][name] = p.text(v)
			}
			info[itemType] = items
		}
	}
	players := []query.Player{}
	for _, item := range info[""] {
		pl := map[string]any{}
		name := ""
		for k, v := range item {
			if k == "player" {
				name = v.(string)
				continue
			}
			if slices.Contains([]string{"score", "ping", "team", "deaths", "pid"}, k) {
				pl[k] = query.ParseInt(v.(string))
				continue
			}
			pl[k] = v
		}
		players = append(players, query.Player{Name: name, Raw: pl})
	}
	raw["playerTeamInfo"] = info
	return raw, players, nil
}

// readJC2MP reads Just Cause 2 Multiplayer's answer: its keys, its player
// count as raw.numPlayers2 and its players with their Steam IDs and
// pings, as GameDig's jc2mp reads them (with an empty playerTeamInfo).
func (p *QueryProtocol) readJC2MP(parts [][]byte) (map[string]any, []query.Player, error) {
	var d wiregs3.JC2MP
	if err := d.Decode(parts[0]); err != nil {
		return nil, nil, err
	}
	raw := map[string]any{"playerTeamInfo": map[string]any{}, "numPlayers2": int(d.NumPlayers)}
	for _, kv := range d.Pairs {
		raw[p.text(kv.Key)] = p.text(kv.Value)
	}
	players := make([]query.Player, len(d.Players))
	for i, pl := range d.Players {
		players[i] = query.Player{Name: p.text(pl.Name), Raw: map[string]any{"steamid": p.text(pl.SteamID), "ping": int(pl.Ping)}}
	}
	return raw, players, nil
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw: the status's raw data.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var (
	_ query.ProtocolConfig = (*Config)(nil)
	_ query.ProtocolConfig = (*JC2MPConfig)(nil)
)
