// Package serverlist answers HTTP requests for the list of game servers a
// master knows, each with its live status in the game query result shape
// (GameDig's), filtered, sorted and paged, with an ETag. It is free of
// Caddy.
package serverlist

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	wiremaster "github.com/gamegate/gamegate/wire/master"
	wireq3 "github.com/gamegate/gamegate/wire/quake3"
)

// Defaults of Config.
const (
	DefaultTTL          = 10 * time.Second
	DefaultQueryTimeout = 3 * time.Second
	DefaultMaxQueries   = 16
	DefaultLimit        = 100
	MaxLimit            = 1000
)

// Config is the behaviour of a List.
type Config struct {
	// Registry holds the servers listed. Required.
	Registry *master.Registry
	// Status queries a server's live status (the Quake 3 protocol).
	// Required.
	Status func(ctx context.Context, address string) (*query.Status, error)
	// TTL is how long a status is reused; it is served stale for as long
	// again while one refresh runs. Default: 10s.
	TTL time.Duration
	// QueryTimeout bounds one status query. Default: 3s.
	QueryTimeout time.Duration
	// MaxQueries bounds the status queries running at once; a server
	// whose status is not cached is listed from its last infoResponse
	// meanwhile. Default: 16.
	MaxQueries int
	// Now gives the time. Default: time.Now.
	Now func() time.Time
	// ClientIP gives a request's client address, which decides the
	// servers it is shown (master.Visible). Behind a proxy it must be the
	// client's, not the proxy's: a proxy on loopback would otherwise be
	// shown every loopback and private server. Default: the address of
	// the request's RemoteAddr.
	ClientIP func(*http.Request) netip.Addr
}

// Bounds Validate checks.
const (
	MaxTTL          = 24 * time.Hour
	MaxQueryTimeout = time.Minute
	MaxMaxQueries   = 1024
)

// Validate checks the options' ranges; zero values (the defaults) pass.
// The names are the options'.
func (c Config) Validate() error {
	switch {
	case c.TTL < 0 || c.TTL > MaxTTL:
		return fmt.Errorf("ttl must be a duration in [0s, %s], not %s", MaxTTL, c.TTL)
	case c.QueryTimeout < 0 || c.QueryTimeout > MaxQueryTimeout:
		return fmt.Errorf("query_timeout must be a duration in [0s, %s], not %s", MaxQueryTimeout, c.QueryTimeout)
	case c.MaxQueries < 0 || c.MaxQueries > MaxMaxQueries:
		return fmt.Errorf("max_queries must be in [1, %d], not %d", MaxMaxQueries, c.MaxQueries)
	}
	return nil
}

// List serves the server list.
type List struct {
	cfg     Config
	cache   *cache.Results[netip.AddrPort, *query.Status]
	policy  cache.Policy
	queries chan struct{}
}

// New returns a List with cfg.
func New(cfg Config) (*List, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.QueryTimeout == 0 {
		cfg.QueryTimeout = DefaultQueryTimeout
	}
	if cfg.MaxQueries == 0 {
		cfg.MaxQueries = DefaultMaxQueries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c, err := cache.NewResults[netip.AddrPort, *query.Status](master.MaxMaxServers, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &List{
		cfg:     cfg,
		cache:   c,
		policy:  cache.Policy{TTL: cfg.TTL, StaleWhileRevalidate: cfg.TTL, StaleIfError: cfg.TTL, NegativeTTL: cfg.TTL, LoadTimeout: cfg.QueryTimeout},
		queries: make(chan struct{}, cfg.MaxQueries),
	}, nil
}

// Close ends the status queries running and starts no more.
func (l *List) Close() { l.cache.Close() }

// Server is one entry of the list: a status in the game query result
// shape, and the game name the server registered with.
type Server struct {
	Status *query.Status
	Game   string
}

// MarshalJSON writes the status with "game" beside its fields.
func (s Server) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(s.Status)
	if err != nil || len(b) < 2 {
		return b, err
	}
	game, _ := json.Marshal(s.Game)
	out := append(b[:len(b)-1:len(b)-1], `,"game":`...)
	out = append(out, game...)
	return append(out, '}'), nil
}

// Page is the answer: the servers matching the filters, sorted, from
// Offset, at most Limit of them; Total counts every match.
type Page struct {
	Total   int      `json:"total"`
	Offset  int      `json:"offset"`
	Limit   int      `json:"limit"`
	Servers []Server `json:"servers"`
}

// Servers returns every listed server with its status: the live one where
// cached (fresh or being refreshed), otherwise what its last infoResponse
// said, while a query (at most MaxQueries at once) fetches the live one.
// Only servers visible to client are listed (master.Visible: no loopback
// or private address to a client farther away).
func (l *List) Servers(client netip.Addr) []Server {
	regs := l.cfg.Registry.Servers(nil)
	out := make([]Server, 0, len(regs))
	for _, r := range regs {
		if !master.Visible(r.Addr.Addr(), client) {
			continue
		}
		st := l.status(r)
		out = append(out, Server{Status: st, Game: r.GameName})
	}
	return out
}

func (l *List) status(r master.Server) *query.Status {
	res, ok, loading := l.cache.Peek(r.Addr, l.policy)
	if ok && res.Err == nil && res.Value != nil {
		return res.Value
	}
	if !loading {
		select {
		case l.queries <- struct{}{}:
			go func() {
				defer func() { <-l.queries }()
				_, _ = l.cache.Get(context.Background(), r.Addr, l.policy, func(ctx context.Context) (*query.Status, error) {
					return l.cfg.Status(ctx, r.Addr.String())
				})
			}()
		default:
		}
	}
	return fromInfo(r)
}

// fromInfo is a server's status as its last infoResponse gave it.
func fromInfo(r master.Server) *query.Status {
	st := &query.Status{Protocol: "quake3", NumPlayers: r.Clients, MaxPlayers: r.MaxClients,
		Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{}}
	st.SetAddress(r.Addr.String(), 0)
	if v, ok := wiremaster.InfoValue(r.Info, "hostname"); ok {
		st.Name = string(bytes.ToValidUTF8(wireq3.AppendPlainName(nil, v), nil))
	}
	if v, ok := wiremaster.InfoValue(r.Info, "mapname"); ok {
		st.Map = string(bytes.ToValidUTF8(v, nil))
	}
	if v, ok := wiremaster.InfoValue(r.Info, "g_needpass"); ok {
		st.Password = string(v) != "0" && len(v) > 0
	}
	for _, k := range []string{"hostname", "mapname", "gamename", "gametype", "protocol", "clients", "sv_maxclients", "g_needpass", "g_humanplayers", "bots"} {
		if v, ok := wiremaster.InfoValue(r.Info, k); ok {
			st.Raw[k] = string(bytes.ToValidUTF8(v, nil))
		}
	}
	return st
}

// Filter is what a request asks for, from its query string: game, map,
// not_empty, not_full, no_password, sort (name, map, game, players,
// maxplayers, ping; a leading - for descending), offset and limit.
type Filter struct {
	Game, Map                     string
	NotEmpty, NotFull, NoPassword bool
	Sort                          string
	Desc                          bool
	Offset, Limit                 int
}

// ParseFilter reads a Filter from a query string, or names the parameter
// at fault.
func ParseFilter(q map[string][]string) (Filter, string) {
	f := Filter{Limit: DefaultLimit, Sort: "name"}
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	flag := func(k string) (bool, bool) {
		switch get(k) {
		case "":
			_, given := q[k]
			return given, true
		case "1", "true":
			return true, true
		case "0", "false":
			return false, true
		}
		return false, false
	}
	f.Game, f.Map = get("game"), get("map")
	var ok bool
	if f.NotEmpty, ok = flag("not_empty"); !ok {
		return f, "not_empty"
	}
	if f.NotFull, ok = flag("not_full"); !ok {
		return f, "not_full"
	}
	if f.NoPassword, ok = flag("no_password"); !ok {
		return f, "no_password"
	}
	if s := get("sort"); s != "" {
		f.Sort, f.Desc = strings.CutPrefix(s, "-")
		switch f.Sort {
		case "name", "map", "game", "players", "maxplayers", "ping":
		default:
			return f, "sort"
		}
	}
	num := func(k string, lo, hi int, v *int) bool {
		s := get(k)
		if s == "" {
			return true
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return false
		}
		*v = n
		return true
	}
	if !num("offset", 0, master.MaxMaxServers, &f.Offset) {
		return f, "offset"
	}
	if !num("limit", 1, MaxLimit, &f.Limit) {
		return f, "limit"
	}
	return f, ""
}

// Apply returns the page of servers f asks for.
func (f Filter) Apply(servers []Server) Page {
	keep := servers[:0]
	for _, s := range servers {
		st := s.Status
		switch {
		case f.Game != "" && !strings.EqualFold(s.Game, f.Game),
			f.Map != "" && !strings.EqualFold(st.Map, f.Map),
			f.NotEmpty && st.NumPlayers == 0,
			f.NotFull && st.MaxPlayers > 0 && st.NumPlayers >= st.MaxPlayers,
			f.NoPassword && st.Password:
			continue
		}
		keep = append(keep, s)
	}
	key := func(s Server) (string, int64) {
		switch f.Sort {
		case "map":
			return strings.ToLower(s.Status.Map), 0
		case "game":
			return strings.ToLower(s.Game), 0
		case "players":
			return "", int64(s.Status.NumPlayers)
		case "maxplayers":
			return "", int64(s.Status.MaxPlayers)
		case "ping":
			return "", s.Status.Ping
		}
		return strings.ToLower(s.Status.Name), 0
	}
	slices.SortStableFunc(keep, func(a, b Server) int {
		as, an := key(a)
		bs, bn := key(b)
		c := strings.Compare(as, bs)
		if c == 0 {
			c = int(min(max(an-bn, -1), 1))
		}
		if f.Desc {
			c = -c
		}
		if c == 0 { // a stable order whatever the registry's
			c = strings.Compare(a.Status.Address, b.Status.Address)
		}
		return c
	})
	p := Page{Total: len(keep), Offset: f.Offset, Limit: f.Limit, Servers: []Server{}}
	if f.Offset < len(keep) {
		p.Servers = keep[f.Offset:min(len(keep), f.Offset+f.Limit)]
	}
	return p
}

// Client is the address of r's client that decides the servers it is
// shown: Config.ClientIP's answer, else RemoteAddr's address; unknown, a
// public address.
func (l *List) Client(r *http.Request) netip.Addr {
	client := netip.IPv4Unspecified() // unknown: public
	if l.cfg.ClientIP != nil {
		if a := l.cfg.ClientIP(r); a.IsValid() {
			client = a
		}
	} else if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		client = ap.Addr()
	}
	return client
}

// ServeHTTP answers GET and HEAD at any path (so the list works under a
// path prefix: handle_path /servers/*) with the Page the query string asks
// for, as JSON with a strong ETag; If-None-Match gets 304.
func (l *List) ServeHTTP(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	f, bad := ParseFilter(r.URL.Query())
	if bad != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid parameter ` + bad + `"}`))
		return http.StatusBadRequest
	}
	body, err := json.Marshal(f.Apply(l.Servers(l.Client(r))))
	if err != nil {
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	etag := cache.ETag(body, false)
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if cache.IfNoneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
	return http.StatusOK
}
