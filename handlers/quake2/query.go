// Package quake2 queries Quake 2 servers (and, with its QuakeWorld
// dialect, Quake 1's QuakeWorld servers: see handlers/quake1) for the
// game-query gateway.
package quake2

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/wire"
	wireq2 "github.com/gamegate/gamegate/wire/quake2"
)

// Config is the configuration of the Quake 2 status query
// (gamegate.query.quake2: Quake 2, Alien Arena, Daikatana and the other
// games GameDig lists under "quake2"). A status maps the info string's
// host name, map, version, max players and password flag, and one player
// per line (bots are the players with ping 0); the info string is raw.
// Zero values are the defaults.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{UDPExchange: c.Exchange(), Dialect: wireq2.Quake2}, nil
}

// QueryProtocol is the status query of Quake 2 or QuakeWorld as a
// query.Protocol. The query has no challenge: the exchange's connected
// socket takes datagrams from the server's address only.
type QueryProtocol struct {
	query.UDPExchange
	// Dialect is the game's: wireq2.Quake2 (the default), QuakeWorld or
	// FiveM (its getinfo answer, UTF-8; see handlers/fivem).
	Dialect wireq2.Dialect
	// Now gives the time, for ping measurement. Default: time.Now.
	Now func() time.Time
}

func (p *QueryProtocol) dialect() wireq2.Dialect {
	if p.Dialect == wireq2.QuakeWorld || p.Dialect == wireq2.FiveM {
		return p.Dialect
	}
	return wireq2.Quake2
}

// Name returns "quake2", "quake1" for QuakeWorld, "fivem" for FiveM.
func (p *QueryProtocol) Name() string {
	switch p.dialect() {
	case wireq2.QuakeWorld:
		return "quake1"
	case wireq2.FiveM:
		return "fivem"
	}
	return "quake2"
}

// Status asks "status" and maps the answer as GameDig does: hostname (or
// sv_hostname), mapname (QuakeWorld's map too), maxclients (or
// sv_maxclients), version (QuakeWorld: *version; iv where a server sends
// it), and needpass or g_needpass for the password. numplayers counts the
// player lines, or is the clients key where a server sends iv. Text is
// Windows-1252 (FiveM's UTF-8). FiveM asks "getinfo xxx".
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	d := p.dialect()
	text := windows1252
	request := wireq2.Request
	if d == wireq2.FiveM {
		text, request = utf8Text, wireq2.FiveMRequest
	}
	var r wireq2.Response
	answer, rtt, err := p.Answer(ctx, address, []byte(request), p.Now, func(b []byte) bool {
		return wireq2.LooksLikeResponse(b, d) && r.Decode(b, d) == nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.Decode(answer, d); err != nil {
		return nil, query.Upstream(address, err)
	}
	st := &query.Status{Protocol: p.Name(), Ping: rtt.Milliseconds(), Raw: make(map[string]any, len(r.Vars))}
	st.SetAddress(address, 0) // the query port is the game port
	for _, v := range r.Vars {
		st.Raw[text(v.Key)] = text(v.Value)
	}
	get := func(keys ...string) (string, bool) {
		for _, k := range keys {
			if v, ok := st.Raw[k].(string); ok {
				return v, true
			}
		}
		return "", false
	}
	st.Name, _ = get("hostname", "sv_hostname")
	st.Map, _ = get("mapname", "map")
	if v, ok := get("maxclients", "sv_maxclients"); ok {
		st.MaxPlayers = atoi(v)
	}
	if v, ok := get("needpass", "g_needpass"); ok {
		st.Password = atoi(v) != 0
	}
	versionKeys := []string{"iv", "version"}
	if d == wireq2.QuakeWorld {
		versionKeys = []string{"*version", "iv", "version"}
	}
	st.Version, _ = get(versionKeys...)
	st.Players, st.Bots = []query.Player{}, []query.Player{}
	for i := range r.Players {
		pl := &r.Players[i]
		entry := player(pl, d, text)
		if pl.Ping != 0 {
			st.Players = append(st.Players, entry)
		} else {
			st.Bots = append(st.Bots, entry)
		}
	}
	st.NumPlayers = len(r.Players)
	if _, iv := st.Raw["iv"]; iv {
		if v, ok := get("clients"); ok {
			st.NumPlayers = atoi(v)
		}
	}
	return st, nil
}

// player is one line as GameDig shapes it, its text read by text.
func player(pl *wireq2.Player, d wireq2.Dialect, text func([]byte) string) query.Player {
	if d == wireq2.QuakeWorld {
		return query.Player{Name: text(pl.Name), Raw: map[string]any{"id": pl.ID, "score": pl.Frags, "time": pl.Time,
			"ping": pl.Ping, "skin": text(pl.Skin), "color1": pl.Top, "color2": pl.Bottom}}
	}
	raw := map[string]any{"frags": pl.Frags, "ping": pl.Ping}
	if len(pl.Address) > 0 {
		raw["address"] = text(pl.Address)
	}
	return query.Player{Name: text(pl.Name), Raw: raw}
}

// windows1252 is b, Windows-1252, as UTF-8.
func windows1252(b []byte) string { return string(wire.AppendWindows1252(nil, b)) }

// utf8Text is b, UTF-8, with each invalid sequence replaced by U+FFFD as
// GameDig's decoding does.
func utf8Text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw, the status's raw data: the protocol's one query.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var _ query.ProtocolConfig = (*Config)(nil)
