// Package gamespy1 queries GameSpy 1 servers for the game-query gateway.
package gamespy1

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire"
	wiregs1 "github.com/gamegate/gamegate/wire/gamespy1"
)

// QueryProtocol is GameSpy 1 as a query.Protocol.
type QueryProtocol struct {
	query.UDPExchange
	// Budget bounds one answer: its datagrams and their bytes together.
	Budget query.Budget
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "gamespy1".
func (p *QueryProtocol) Name() string { return "gamespy1" }

// Pair is one key and value of an answer, as UTF-8.
type Pair struct{ Key, Value string }

// ask sends the status request and gathers the answer's parts, as
// GameDig does: parts of one query ID, each part number once (a datagram
// without one takes the count so far), done when the final part's number
// of parts has come. Later parts' keys replace earlier ones'.
func (p *QueryProtocol) ask(ctx context.Context, address string) ([]Pair, time.Duration, error) {
	var (
		pairs   []Pair
		index   map[string]int
		queryID []byte
		parts   []int
		last    int
		spent   query.Spent
		pkt     wiregs1.Packet
	)
	start := query.Now(p.Now)
	err := p.Exchange(ctx, address, []byte(wiregs1.StatusRequest), func(d []byte) (bool, error) {
		if pkt.Decode(d) != nil {
			return false, nil // not an answer: drop it
		}
		if pkt.QueryID != nil {
			if queryID != nil && !bytes.Equal(queryID, pkt.QueryID) {
				return false, nil // another query's
			}
			queryID = bytes.Clone(pkt.QueryID)
		}
		part := pkt.Part
		if part == 0 {
			part = len(parts)
		}
		if slices.Contains(parts, part) {
			return false, nil
		}
		if err := p.Budget.Spend(&spent, len(d)); err != nil {
			return false, err
		}
		parts = append(parts, part)
		if pkt.Final {
			last = part
		}
		if index == nil {
			index = make(map[string]int)
		}
		for _, kv := range pkt.Pairs {
			k, v := text(kv.Key), text(kv.Value)
			if i, ok := index[k]; ok {
				pairs[i].Value = v
				continue
			}
			index[k] = len(pairs)
			pairs = append(pairs, Pair{k, v})
		}
		return last != 0 && len(parts) == last || pkt.Final && last == 0 && len(parts) == 1, nil
	})
	if err != nil {
		return nil, 0, err
	}
	return pairs, query.Now(p.Now).Sub(start), nil
}

func text(b []byte) string { return string(wire.AppendWindows1252(nil, b)) }

// stringKeys are the keys whose values GameDig keeps as text whatever
// they hold (besides every key with "name" in it).
var stringKeys = []string{"website", "gametype", "gamemode", "player"}

// value types v as GameDig's gamespy1 types the value of key: true and
// false as booleans, numbers as numbers, except for text keys.
func value(key, v string) any {
	kind := key
	if base, n, ok := strings.Cut(key, "_"); ok && !strings.Contains(n, "_") {
		if _, isNum := query.Number(n); isNum || n == "" {
			kind = base
		}
	}
	if slices.Contains(stringKeys, kind) || strings.Contains(kind, "name") {
		return v
	}
	switch {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	}
	if n, ok := query.Number(v); ok {
		return n
	}
	return v
}

// Status asks the server's status: GameDig's result for the same answer.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	pairs, rtt, err := p.ask(ctx, address)
	if err != nil {
		return nil, err
	}
	return status(address, pairs, rtt), nil
}

// status maps an answer as GameDig's gamespy1 does.
func status(address string, pairs []Pair, rtt time.Duration) *query.Status {
	raw := make(map[string]any, len(pairs))
	players := map[int]map[string]any{}
	teams := map[string]any{}
	gamePort := 0
	for _, kv := range pairs {
		key := strings.ToLower(kv.Key)
		v := value(key, kv.Value)
		base, n, split := strings.Cut(key, "_")
		id, isNum := query.Number(n)
		if !split || strings.Contains(n, "_") || !isNum && n != "" {
			raw[key] = v
			continue
		}
		// key_N: a player's or a team's (JavaScript's Number("") is 0)
		idKey := int(id)
		switch {
		case base == "teamname":
			teams[strconv.Itoa(idKey)] = v
		case base != "team" && strings.HasPrefix(base, "team"):
		default:
			pl := players[idKey]
			if pl == nil {
				pl = map[string]any{}
				players[idKey] = pl
			}
			switch base {
			case "playername", "player":
				base = "name"
			case "team":
				if f, ok := v.(float64); ok {
					base = "teamId"
					if raw["gamename"] == "bfield1942" {
						f--
					}
					v = f
				}
			}
			pl[base] = v
		}
	}
	raw["teams"] = teams
	st := &query.Status{Protocol: "gamespy1", Ping: rtt.Milliseconds(), Raw: raw, Players: []query.Player{}, Bots: []query.Player{}}
	if v, ok := raw["hostname"]; ok {
		st.Name = str(v)
	}
	if v, ok := raw["mapname"]; ok {
		st.Map = str(v)
	}
	st.Password = trueTest(raw["password"])
	if v, ok := raw["maxplayers"]; ok {
		st.MaxPlayers = num(v)
	}
	if v, ok := raw["hostport"]; ok {
		gamePort = num(v)
	}
	if v, ok := raw["gamever"]; ok {
		st.Version = str(v)
	}
	ids := make([]int, 0, len(players))
	for id := range players {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		pl := players[id]
		if t, ok := pl["teamId"]; ok {
			if len(teams) > 0 {
				name, _ := teams[strconv.Itoa(int(t.(float64)))].(string)
				pl["team"] = name
			} else {
				pl["team"] = t
				delete(pl, "teamId")
			}
		}
		name := ""
		if n, ok := pl["name"]; ok {
			name = str(n)
			delete(pl, "name")
		}
		st.Players = append(st.Players, query.Player{Name: name, Raw: pl})
	}
	// Some servers (Battlefield 1942) list players who left: no more
	// than the count the server gives.
	// numplayers is compared as a float: a huge one converted to int
	// first would wrap.
	if n, ok := raw["numplayers"].(float64); ok && n >= 0 && float64(len(st.Players)) > n {
		st.Players = st.Players[:int(n)]
	}
	st.NumPlayers = len(st.Players)
	st.SetAddress(address, gamePort)
	return st
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if b, ok := v.(bool); ok {
		return strconv.FormatBool(b)
	}
	return ""
}

func num(v any) int {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	n, _ := query.Number(str(v))
	return int(n)
}

func trueTest(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return query.TrueTest(v)
	}
	return false
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw: the answer's keys and values as sent, in order.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.RawCommand("gamespy1", command, args, func() (any, error) {
		pairs, _, err := p.ask(ctx, address)
		if err != nil {
			return nil, err
		}
		out := make([][2]string, len(pairs))
		for i, kv := range pairs {
			out[i] = [2]string{kv.Key, kv.Value}
		}
		return out, nil
	})
}
