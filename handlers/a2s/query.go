package a2s

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// QueryProtocol is A2S as a query.Protocol. A status is A2S_INFO and
// A2S_PLAYER asked at once; the commands "info", "players" and "rules" ask
// one each and answer it in full.
type QueryProtocol struct {
	Client *Client
}

// Name returns "a2s".
func (p *QueryProtocol) Name() string { return "a2s" }

// ask runs one request and maps its failure to a *query.Error.
func (p *QueryProtocol) ask(ctx context.Context, address string, typ wirea2s.Type) (*Answer, error) {
	a, err := p.Client.Query(ctx, address, typ)
	if err == nil {
		return a, nil
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

// InfoJSON is an A2S_INFO answer as the gateway sends it.
type InfoJSON struct {
	Layout      string `json:"layout"` // "source" or "goldsrc"
	Protocol    int    `json:"protocol"`
	Name        string `json:"name"`
	Map         string `json:"map"`
	Folder      string `json:"folder"`
	Game        string `json:"game"`
	AppID       int    `json:"appid"`
	Players     int    `json:"players"`
	MaxPlayers  int    `json:"maxplayers"`
	Bots        int    `json:"bots"`
	ServerType  string `json:"server_type"`
	Environment string `json:"environment"`
	Password    bool   `json:"password"`
	VAC         bool   `json:"vac"`
	Version     string `json:"version,omitempty"`
	// Extra data, present when the server sent it.
	Port     *int   `json:"port,omitempty"`
	SteamID  string `json:"steamid,omitempty"` // decimal: a uint64 does not fit a JSON number
	TVPort   *int   `json:"sourcetv_port,omitempty"`
	TVName   string `json:"sourcetv_name,omitempty"`
	Keywords string `json:"keywords,omitempty"`
	GameID   string `json:"gameid,omitempty"`
	// GoldSrc only.
	Address string    `json:"address,omitempty"`
	Mod     *ModJSON  `json:"mod,omitempty"`
	Ship    *ShipJSON `json:"ship,omitempty"`
}

// ModJSON is the mod description of a GoldSrc answer.
type ModJSON struct {
	Link     string `json:"link"`
	Download string `json:"download"`
	Version  uint32 `json:"version"`
	Size     uint32 `json:"size"`
	Type     int    `json:"type"`
	DLL      int    `json:"dll"`
}

// ShipJSON is The Ship's extra info fields.
type ShipJSON struct {
	Mode      int `json:"mode"`
	Witnesses int `json:"witnesses"`
	Duration  int `json:"duration"`
}

func char(b byte) string {
	if b < 0x20 || b >= 0x7F {
		return strconv.Itoa(int(b))
	}
	return string(rune(b))
}

// InfoToJSON converts a decoded A2S_INFO answer (copying its bytes).
func InfoToJSON(m *wirea2s.Info) *InfoJSON {
	j := &InfoJSON{Layout: "source", Protocol: int(m.Protocol), Name: string(m.Name), Map: string(m.Map),
		Folder: string(m.Folder), Game: string(m.Game), AppID: int(m.AppID), Players: int(m.Players),
		MaxPlayers: int(m.MaxPlayers), Bots: int(m.Bots), ServerType: char(m.ServerType),
		Environment: char(m.Environment), Password: m.Visibility == 1, VAC: m.VAC == 1, Version: string(m.Version)}
	if m.GoldSrc {
		j.Layout, j.Address = "goldsrc", string(m.Address)
		if m.Mod == 1 {
			j.Mod = &ModJSON{Link: string(m.ModLink), Download: string(m.ModDownload), Version: m.ModVersion,
				Size: m.ModSize, Type: int(m.ModType), DLL: int(m.ModDLL)}
		}
		return j
	}
	if m.AppID == wirea2s.AppIDTheShip {
		j.Ship = &ShipJSON{Mode: int(m.ShipMode), Witnesses: int(m.ShipWitnesses), Duration: int(m.ShipDuration)}
	}
	if m.EDF&wirea2s.EDFPort != 0 {
		port := int(m.Port)
		j.Port = &port
	}
	if m.EDF&wirea2s.EDFSteamID != 0 {
		j.SteamID = strconv.FormatUint(m.SteamID, 10)
	}
	if m.EDF&wirea2s.EDFSourceTV != 0 {
		port := int(m.TVPort)
		j.TVPort, j.TVName = &port, string(m.TVName)
	}
	if m.EDF&wirea2s.EDFKeywords != 0 {
		j.Keywords = string(m.Keywords)
	}
	if m.EDF&wirea2s.EDFGameID != 0 {
		j.GameID = strconv.FormatUint(m.GameID, 10)
	}
	return j
}

// PlayerJSON is one player as the gateway sends it.
type PlayerJSON struct {
	Index    int     `json:"index"`
	Name     string  `json:"name"`
	Score    int32   `json:"score"`
	Duration float64 `json:"duration"` // seconds
}

// RuleJSON is one rule as the gateway sends it: a list keeps the server's
// order and any repeated names.
type RuleJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (p *QueryProtocol) info(ctx context.Context, address string) (*InfoJSON, time.Duration, error) {
	a, err := p.ask(ctx, address, wirea2s.TypeInfoRequest)
	if err != nil {
		return nil, 0, err
	}
	var m wirea2s.Info
	if err := m.Decode(a.Message); err != nil {
		return nil, 0, query.Upstream(address, err)
	}
	return InfoToJSON(&m), a.RTT, nil
}

func (p *QueryProtocol) players(ctx context.Context, address string) ([]PlayerJSON, error) {
	a, err := p.ask(ctx, address, wirea2s.TypePlayerRequest)
	if err != nil {
		return nil, err
	}
	var m wirea2s.Players
	if err := m.Decode(a.Message); err != nil {
		return nil, query.Upstream(address, err)
	}
	out := make([]PlayerJSON, len(m.Players))
	for i, pl := range m.Players {
		d := float64(pl.Duration)
		if d != d || d > 1e12 || d < -1e12 { // NaN or absurd: JSON cannot carry NaN or Inf
			d = 0
		}
		out[i] = PlayerJSON{Index: int(pl.Index), Name: string(pl.Name), Score: pl.Score, Duration: d}
	}
	return out, nil
}

func (p *QueryProtocol) rules(ctx context.Context, address string) ([]RuleJSON, error) {
	a, err := p.ask(ctx, address, wirea2s.TypeRulesRequest)
	if err != nil {
		return nil, err
	}
	var m wirea2s.Rules
	if err := m.Decode(a.Message); err != nil {
		return nil, query.Upstream(address, err)
	}
	out := make([]RuleJSON, len(m.Rules))
	for i, r := range m.Rules {
		out[i] = RuleJSON{Name: string(r.Name), Value: string(r.Value)}
	}
	return out, nil
}

// ReadOnlyCommands are every A2S command: queries change nothing on a
// server.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"info", "players", "rules"} }

// Command runs "info", "players" or "rules"; they take no arguments.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	if len(args) > 0 && (command == "info" || command == "players" || command == "rules") {
		return nil, query.Errorf(http.StatusBadRequest, "the A2S command %q takes no arguments", command)
	}
	switch command {
	case "info":
		info, _, err := p.info(ctx, address)
		return info, err
	case "players":
		return p.players(ctx, address)
	case "rules":
		return p.rules(ctx, address)
	}
	return nil, query.Errorf(http.StatusNotFound, "A2S has no command %q (it has info, players and rules)", command)
}

// Status asks A2S_INFO and A2S_PLAYER at once. The info answer is needed;
// a server that does not answer A2S_PLAYER (some stop when many players
// are on) still has a status, with the player count from its info answer,
// no names, and the reason under raw.players_error.
//
// A2S_PLAYER does not say which players are bots; A2S_INFO says how many
// there are. As GameDig does, the bots are taken to be that many players
// with the longest time on the server (bots join with the map), ties going
// to the later-listed.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	type result struct {
		players []PlayerJSON
		err     error
	}
	ch := make(chan result, 1)
	go func() {
		pl, err := p.players(ctx, address)
		ch <- result{pl, err}
	}()
	info, rtt, err := p.info(ctx, address)
	pr := <-ch
	if err != nil {
		return nil, err
	}
	st := &query.Status{Name: info.Name, Map: info.Map, Version: info.Version, NumPlayers: info.Players,
		MaxPlayers: info.MaxPlayers, Password: info.Password, Protocol: "a2s", Ping: rtt.Milliseconds(),
		Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{"info": info}}
	gamePort := 0
	if info.Port != nil {
		gamePort = *info.Port
	}
	st.SetAddress(address, gamePort)
	if pr.err != nil {
		st.Raw["players_error"] = pr.err.Error()
	} else {
		bots := botIndexes(pr.players, info.Bots)
		for i, pl := range pr.players {
			qp := query.Player{Name: pl.Name, Raw: map[string]any{"score": pl.Score, "time": pl.Duration}}
			if bots[i] {
				st.Bots = append(st.Bots, qp)
			} else {
				st.Players = append(st.Players, qp)
			}
		}
	}
	st.Raw["bots"] = info.Bots
	return st, nil
}

// botIndexes marks the n players taken to be bots: those with the longest
// time on the server, ties going to the later-listed (GameDig's rule; a
// time of -1 counts as the longest).
func botIndexes(players []PlayerJSON, n int) []bool {
	bots := make([]bool, len(players))
	if n <= 0 {
		return bots
	}
	order := make([]int, len(players))
	for i := range order {
		order[i] = i
	}
	key := func(i int) float64 {
		if d := players[i].Duration; d != -1 {
			return d
		}
		return math.MaxFloat64
	}
	sort.SliceStable(order, func(a, b int) bool { return key(order[a]) < key(order[b]) })
	for k := len(order) - 1; k >= 0 && n > 0; k, n = k-1, n-1 {
		bots[order[k]] = true
	}
	return bots
}
