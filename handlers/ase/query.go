// Package ase queries All-Seeing-Eye servers (Multi Theft Auto, Far Cry,
// Chrome, Painkiller and the other games GameDig lists under "ase") for
// the game-query gateway.
package ase

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	wirease "github.com/gamegate/gamegate/wire/ase"
)

// Config is the configuration of the All-Seeing-Eye server query
// (gamegate.query.ase: Multi Theft Auto, Far Cry, Chrome, Painkiller and
// the other games GameDig lists under "ase"; the query port is usually the
// game port plus 123). A status maps the answer's name, map, version,
// password flag and counts, the game port the server names (connect), its
// rules under raw and its players with their flagged fields. ASE has no
// commands. Zero values are the defaults.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange()}, nil
}

// QueryProtocol is ASE as a query.Protocol. The query has no challenge:
// the exchange's connected socket takes datagrams from the server's
// address only, and the first one that decodes as an answer is the answer.
type QueryProtocol struct {
	query.UDPExchange
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

// Name returns "ase".
func (p *QueryProtocol) Name() string { return "ase" }

// Status asks the server and maps its answer as GameDig does: the rules
// are raw's own keys beside gamename and gametype, the players keep the
// fields their flags name (score, ping and time as numbers), and the
// game port the server names is connect's. ASE marks no bots.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	var r wirease.Response
	answer, rtt, err := p.Answer(ctx, address, []byte(wirease.Request), p.Now, func(d []byte) bool {
		return wirease.LooksLikeResponse(d) && r.Decode(d) == nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.Decode(answer); err != nil {
		return nil, query.Upstream(address, err)
	}
	st := &query.Status{Protocol: "ase", Ping: rtt.Milliseconds(), Name: text(r.Name), Map: text(r.Map),
		Version: text(r.Version), Password: string(r.Password) == "1",
		NumPlayers: number(r.NumPlayers), MaxPlayers: number(r.MaxPlayers),
		Raw: map[string]any{"gamename": text(r.Game), "gametype": text(r.GameType)}}
	st.SetAddress(address, number(r.Port))
	for _, rule := range r.Rules {
		st.Raw[text(rule.Key)] = text(rule.Value)
	}
	st.Players = make([]query.Player, 0, len(r.Players))
	for i := range r.Players {
		st.Players = append(st.Players, player(&r.Players[i]))
	}
	return st, nil
}

// player is one player as GameDig shapes it: only the fields its flags
// name, under raw but for the name.
func player(pl *wirease.Player) query.Player {
	p := query.Player{Name: text(pl.Name), Raw: map[string]any{}}
	if pl.Flags&wirease.FlagTeam != 0 {
		p.Raw["team"] = text(pl.Team)
	}
	if pl.Flags&wirease.FlagSkin != 0 {
		p.Raw["skin"] = text(pl.Skin)
	}
	for _, f := range []struct {
		flag byte
		key  string
		v    []byte
	}{{wirease.FlagScore, "score", pl.Score}, {wirease.FlagPing, "ping", pl.Ping}, {wirease.FlagTime, "time", pl.Time}} {
		if pl.Flags&f.flag != 0 {
			p.Raw[f.key] = number(f.v)
		}
	}
	return p
}

// text is b as a string: ASE's strings are UTF-8 (as GameDig reads them),
// with bytes that are not replaced.
func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// number reads the decimal text b, 0 when it is not one.
func number(b []byte) int {
	n, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	return n
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw, the status's raw data: the protocol's one query.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}
