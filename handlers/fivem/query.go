// Package fivem queries FiveM and RedM servers (Cfx.re's FXServer) for the
// game-query gateway.
package fivem

import (
	"context"
	"math"
	"strconv"

	"github.com/gamegate/gamegate/handlers/quake2"
	"github.com/gamegate/gamegate/handlers/query"
	wirefivem "github.com/gamegate/gamegate/wire/fivem"
	wireq2 "github.com/gamegate/gamegate/wire/quake2"
)

// Config is the configuration of the FiveM query (gamegate.query.fivem:
// FiveM and RedM, GameDig's gta5f and rdr2r). A status asks the server's
// getinfo over UDP, then its /info.json and /players.json over HTTP on the
// same port, as GameDig does. Command: raw.
type Config struct {
	// attempt_timeout and retries (of the getinfo query and of each HTTP
	// request), and max_response_size (of each HTTP answer's body).
	query.HTTPAttempts
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{Info: quake2.QueryProtocol{UDPExchange: c.Exchange(), Dialect: wireq2.FiveM}, API: c.HTTPAPI()}, nil
}

// QueryProtocol is FiveM's query as a query.Protocol: Quake 2's status
// query in FiveM's dialect, then the server's HTTP documents.
type QueryProtocol struct {
	// Info asks getinfo.
	Info quake2.QueryProtocol
	// API asks the HTTP documents.
	API *query.HTTPAPI
}

// Name returns "fivem".
func (p *QueryProtocol) Name() string { return "fivem" }

// Status maps getinfo as Quake 2's query does (hostname, mapname,
// sv_maxclients; numplayers is clients, version iv), then adds
// /info.json as raw.info (its version, when it has one, is the version)
// and /players.json as raw.players, with a player for each entry (its
// name; its ping under raw). An unusable /info.json fails the status; an
// unusable /players.json leaves the players out, as GameDig does.
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	st, err := p.Info.Status(ctx, address)
	if err != nil {
		return nil, err
	}
	body, _, err := p.API.Get(ctx, address, "/info.json")
	if err != nil {
		return nil, err
	}
	var info wirefivem.Info
	if err := info.Decode(body); err != nil {
		return nil, query.Upstream(address, err)
	}
	st.Raw["info"] = info.Doc
	if info.HasVersion {
		st.Version = jsString(info.Version)
	}
	if body, _, err := p.API.Get(ctx, address, "/players.json"); err == nil {
		var players wirefivem.Players
		if players.Decode(body) == nil {
			st.Raw["players"] = players.Doc
			for _, pl := range players.List {
				raw := map[string]any{}
				if pl.HasPing {
					raw["ping"] = pl.Ping
				}
				st.Players = append(st.Players, query.Player{Name: pl.Name, Raw: raw})
			}
		}
	}
	return st, nil
}

// jsString is JavaScript's String(v) for a JSON value's usual types.
func jsString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e21 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case []any:
		return "" // an array's String joins its items: not a version
	}
	return "[object Object]"
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw: the status's raw data.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var _ query.ProtocolConfig = (*Config)(nil)
