// Package unreal2 queries Unreal Engine 2 servers (Unreal Tournament 2003
// and 2004, Killing Floor, Red Orchestra, Darkest Hour, Devastation) for
// the game-query gateway.
package unreal2

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	wireu2 "github.com/gamegate/gamegate/wire/unreal2"
)

// Defaults and bounds of Config's quiet_timeout.
const (
	DefaultQuietTimeout = 200 * time.Millisecond
	MinQuietTimeout     = time.Millisecond
	MaxQuietTimeout     = 10 * time.Second
)

// Config is the configuration of the Unreal Engine 2 server query
// (gamegate.query.unreal2: Unreal Tournament 2003 and 2004, Killing Floor,
// Red Orchestra, Darkest Hour, Devastation; the query port is usually the
// game port plus one). A status asks the server info, rules and players at
// once; rules and players may come in several datagrams, which carry no
// count: an answer is complete once no datagram has come for
// quiet_timeout after the server info. Zero values are the defaults.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
	// max_packets and max_response_size: the datagrams and bytes of the
	// three answers together.
	query.Budget
	// Time without a datagram, once the server info has come, after which
	// the answer is complete, 1ms to 10s (and under attempt_timeout to
	// matter). Default: 200ms.
	QuietTimeout duration.Duration `json:"quiet_timeout,omitempty"`
}

// Validate checks every option's range.
func (c *Config) Validate() error {
	return bounds.First(c.Attempts.Validate(), c.Budget.Validate(),
		bounds.Duration("quiet_timeout", c.QuietTimeout.Std(), MinQuietTimeout, MaxQuietTimeout))
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange(), Budget: c.Budget, QuietTimeout: c.QuietTimeout.Std()}, nil
}

// QueryProtocol is Unreal 2 as a query.Protocol. The query has no
// challenge: the exchange's connected socket takes datagrams from the
// server's address only.
type QueryProtocol struct {
	query.UDPExchange
	// Budget and QuietTimeout are Config's; zero values are the
	// defaults.
	Budget       query.Budget
	QuietTimeout time.Duration
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "unreal2".
func (p *QueryProtocol) Name() string { return "unreal2" }

// answers are the payloads of one attempt: the first server info, and
// the rules' and players' payloads joined in arrival order.
type answers struct {
	info           []byte
	rules, players []byte
	spent          query.Spent
	// infoAt is when the server info came: the ping, without the quiet
	// spell that ends the answer.
	infoAt time.Time
}

// ask sends the three queries and gathers their answers within the
// budget.
func (p *QueryProtocol) ask(ctx context.Context, address string) (*answers, error) {
	quiet := p.QuietTimeout
	if quiet <= 0 {
		quiet = DefaultQuietTimeout
	}
	var got *answers
	err := p.RunAddress(ctx, address, func(a *query.Attempt) (func([]byte) (bool, error), error) {
		for _, kind := range []byte{wireu2.KindInfo, wireu2.KindRules, wireu2.KindPlayers} {
			if a.Send(wireu2.AppendRequest(nil, kind)) != nil {
				return nil, nil // cannot be sent now: as good as unanswered
			}
		}
		ans := new(answers)
		return func(d []byte) (bool, error) {
			if d == nil { // quiet since the last datagram
				got = ans
				return ans.info != nil, nil
			}
			kind, payload, err := wireu2.SplitPacket(d)
			if err != nil {
				return false, nil // not an answer: drop it
			}
			if err := p.Budget.Spend(&ans.spent, len(payload)); err != nil {
				return false, err
			}
			switch kind {
			case wireu2.KindInfo:
				if ans.info == nil {
					ans.info = append([]byte{}, payload...)
					ans.infoAt = query.Now(p.Now)
				}
			case wireu2.KindRules:
				ans.rules = append(ans.rules, payload...)
			case wireu2.KindPlayers:
				ans.players = append(ans.players, payload...)
			}
			if ans.info != nil {
				a.EndAfterQuiet(quiet)
			}
			return false, nil
		}, nil
	})
	return got, err
}

// Status asks the server info, rules and players and maps them as GameDig
// does: the rules under raw.rules (a repeated key's values joined by
// commas) but the mutators, under raw.mutators; players with a ping of 0
// are bots, and entries with an ID of 0 (team scores) go to
// raw.scoreboard. Names, map, game type, rules and skill are without
// Unreal's colour codes. The password flag is the GamePassword rule being
// True (GameDig 5.3.3 reads it inverted).
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	start := query.Now(p.Now)
	ans, err := p.ask(ctx, address)
	if err != nil {
		return nil, err
	}
	rtt := ans.infoAt.Sub(start)
	var info wireu2.Info
	var rules wireu2.Rules
	var players wireu2.Players
	for _, d := range []struct {
		what string
		err  error
	}{{"server info", info.Decode(ans.info)}, {"rules", rules.Decode(ans.rules)}, {"players", players.Decode(ans.players)}} {
		if d.err != nil {
			return nil, query.Upstream(address, fmt.Errorf("%s: %w", d.what, d.err))
		}
	}
	st := &query.Status{Protocol: "unreal2", Ping: rtt.Milliseconds(), Name: text(info.Name), Map: text(info.Map),
		NumPlayers: int(info.NumPlayers), MaxPlayers: int(info.MaxPlayers)}
	st.SetAddress(address, int(info.GamePort))
	mutators, rulesRaw := mapRules(rules.Rules)
	st.Password = rulesRaw["GamePassword"] == "True"
	if v, ok := rulesRaw["UTComp_Version"].(string); ok {
		st.Version = v
	}
	st.Raw = map[string]any{"serverid": info.ServerID, "ip": string(wireu2.AppendUTF8(nil, info.IP, false)),
		"queryport": info.QueryPort, "gametype": text(info.GameType), "mutators": mutators, "rules": rulesRaw}
	killingFloor := slices.Contains(mutators, any("KillingFloorMut")) || rulesRaw["Num trader weapons"] != nil ||
		rulesRaw["Server Version"] == "1065"
	extra, _ := wireu2.DecodeExtra(info.Extra, killingFloor) // fields missing stay 0, as GameDig reads them
	st.Raw["ping"] = extra.Ping
	switch {
	case killingFloor:
		st.Raw["wavecurrent"], st.Raw["wavetotal"], st.Raw["flags"] = extra.WaveCurrent, extra.WaveTotal, extra.Flags
		st.Raw["skillLevel"] = text(extra.Skill)
	case extra.HasFlags:
		st.Raw["flags"], st.Raw["skill"] = extra.Flags, text(extra.Skill)
	}
	scoreboard := map[string]any{}
	st.Players, st.Bots = []query.Player{}, []query.Player{}
	for _, pl := range players.Players {
		name := text(pl.Name)
		switch {
		case pl.ID == 0:
			scoreboard[name] = pl.Score
		default:
			entry := query.Player{Name: name, Raw: map[string]any{"id": pl.ID, "ping": pl.Ping, "score": pl.Score, "statsId": pl.StatsID}}
			if pl.Ping == 0 {
				st.Bots = append(st.Bots, entry)
			} else {
				st.Players = append(st.Players, entry)
			}
		}
	}
	st.Raw["scoreboard"] = scoreboard
	return st, nil
}

// mapRules maps rules as GameDig does: the mutators in order, and the
// other rules by key, the values of a key sent more than once joined by
// commas. The values are joined once at the end: joining each to the
// ones before took time and memory quadratic in the rules of one key.
func mapRules(rules []wireu2.Rule) ([]any, map[string]any) {
	mutators, values := []any{}, map[string][]string{}
	var keys []string
	for _, r := range rules {
		k, v := text(r.Key), text(r.Value)
		switch {
		case k == "Mutator" || k == "mutator":
			mutators = append(mutators, v)
		case k == "" && v == "":
		default:
			if _, seen := values[k]; !seen {
				keys = append(keys, k)
			}
			values[k] = append(values[k], v)
		}
	}
	raw := make(map[string]any, len(keys))
	for _, k := range keys {
		raw[k] = strings.Join(values[k], ",")
	}
	return mutators, raw
}

// text is s as UTF-8 without colour codes.
func text(s wireu2.String) string { return string(wireu2.AppendUTF8(nil, s, true)) }

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw, the status's raw data: the protocol's one query.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var _ query.ProtocolConfig = (*Config)(nil)
