// Package farmingsimulator queries Farming Simulator dedicated servers
// (19, 22, 25) through their web interface's statistics feed, for the
// game-query gateway.
package farmingsimulator

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gamegate/gamegate/handlers/query"
	wirefs "github.com/gamegate/gamegate/wire/farmingsimulator"
)

// Config is the configuration of the Farming Simulator query
// (gamegate.query.farmingsimulator, the games GameDig reads with its
// farmingsimulator protocol). A status is one HTTP request to the
// server's web interface, /feed/dedicated-server-stats.xml with the
// server's feed token; the address is the web interface's (port 8080 by
// default). Command: raw.
type Config struct {
	// attempt_timeout, retries and max_response_size of the request.
	query.HTTPAttempts
	// The server's statistics feed token: the code= of the feed links its
	// web interface shows under Settings. It may be an {env.X}
	// placeholder, replaced when the configuration loads, so that the
	// stored configuration does not hold it. It is sent to the server
	// only, never logged nor shown in answers or errors. Required.
	Token string `json:"token,omitempty"`
}

// Validate checks the options.
func (c *Config) Validate() error {
	if err := c.HTTPAttempts.Validate(); err != nil {
		return err
	}
	if c.Token == "" {
		return errors.New("token: the server's statistics feed token is required (its web interface shows it under Settings)")
	}
	return nil
}

// Secrets returns the token, for its placeholders to be replaced.
func (c *Config) Secrets() map[string]*string { return map[string]*string{"token": &c.Token} }

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	return &QueryProtocol{api: c.HTTPAPI(), token: c.Token}, nil
}

// QueryProtocol is the Farming Simulator feed as a query.Protocol.
type QueryProtocol struct {
	api   *query.HTTPAPI
	token string
}

// Name returns "farmingsimulator".
func (p *QueryProtocol) Name() string { return "farmingsimulator" }

// Status reads the feed and maps it as GameDig does: the server's name,
// map and version, the slots' numUsed and capacity, a player per used
// slot (isUsed, isAdmin, uptime, x, y, z under raw), and raw's data (the
// feed as sent) and mods (name, short_name, author, version, hash of each
// mod with a name).
func (p *QueryProtocol) Status(ctx context.Context, address string) (*query.Status, error) {
	if p.token == "" {
		// An ad-hoc target carries no options: only a named server has
		// its token.
		return nil, query.Errorf(http.StatusForbidden, "Farming Simulator servers are queried with their token: only a named server with its token may be asked")
	}
	body, rtt, err := p.api.Get(ctx, address, "/feed/dedicated-server-stats.xml?code="+url.QueryEscape(p.token))
	if err != nil {
		return nil, err
	}
	var s wirefs.Stats
	if err := s.Decode(body); err != nil {
		return nil, query.Upstream(address, err)
	}
	st := &query.Status{Protocol: "farmingsimulator", Ping: rtt.Milliseconds(), Name: strings.TrimSpace(s.Name), Map: s.MapName,
		NumPlayers: query.ParseInt(s.NumUsed), MaxPlayers: query.ParseInt(s.Capacity), Players: []query.Player{}}
	st.Version = s.Version
	if !s.HasVersion {
		st.Version = "undefined" // GameDig's String(undefined)
	}
	for _, pl := range s.Players {
		if pl.IsUsed != "true" {
			continue
		}
		st.Players = append(st.Players, query.Player{Name: pl.Name, Raw: map[string]any{
			"isUsed": true, "isAdmin": pl.IsAdmin == "true", "uptime": jsParseInt(pl.Uptime),
			"x": query.ParseFloat(pl.X), "y": query.ParseFloat(pl.Y), "z": query.ParseFloat(pl.Z)}})
	}
	mods := make([]map[string]any, 0, len(s.Mods))
	for _, m := range s.Mods {
		if !m.HasName {
			continue
		}
		mods = append(mods, map[string]any{"name": m.Title, "short_name": m.Name, "author": m.Author, "version": m.Version, "hash": m.Hash})
	}
	st.Raw = map[string]any{"data": string(body), "mods": mods}
	st.SetAddress(address, 0)
	return st, nil
}

// jsParseInt is JavaScript's parseInt(s, 10): nil (null in JSON) for NaN.
func jsParseInt(s string) any {
	if n, ok := query.ParseIntOK(s); ok {
		return n
	}
	return nil
}

// ReadOnlyCommands returns raw: it only reads the server's state.
func (p *QueryProtocol) ReadOnlyCommands() []string { return []string{"raw"} }

// Command runs raw: the status's raw data.
func (p *QueryProtocol) Command(ctx context.Context, address, command string, args []string) (any, error) {
	return query.StatusRawCommand(ctx, p, address, command, args)
}

var (
	_ query.ProtocolConfig = (*Config)(nil)
	_ query.SecretHolder   = (*Config)(nil)
)
