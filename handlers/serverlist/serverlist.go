// Package serverlist answers HTTP requests for the list of game servers a
// master knows and game query gateways are configured with, each with its
// live status in the game query result shape (GameDig's), filtered,
// sorted and paged, with an ETag. It is free of Caddy.
package serverlist

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/handlers/games"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/netaddr"
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
	// DefaultMaxStatusSize is a server's entry in a page, in bytes: a
	// Quake 3 status of 32 players and 100 variables (about 6 KB) fits.
	DefaultMaxStatusSize = 8 << 10
	// DefaultMaxPageSize is a page's body, in bytes.
	DefaultMaxPageSize = 1 << 20
)

// Config is the behaviour of a List, and the options of the server_list
// module, which embeds it: the JSON keys and the names in Validate's
// errors are the options'. Zero values mean the defaults.
type Config struct {
	// master, game_query: the lists the servers are read from.
	Source
	// How long a server's queried status is reused, and then served
	// stale while one refresh runs (for as long as its server is listed,
	// and after a failed refresh, retried every ttl). Default: 10s.
	TTL duration.Duration `json:"ttl,omitempty"`
	// Time allowed for one status query, retries included. Default: 3s.
	QueryTimeout duration.Duration `json:"query_timeout,omitempty"`
	// Status queries running at once; a server whose status is not
	// cached yet is listed from its last infoResponse meanwhile. Default:
	// 16.
	MaxQueries int `json:"max_queries,omitempty"`
	// max_status_size, max_page_size: the bounds of the answers.
	Sizes

	// Registry holds the master's servers. Required.
	Registry *master.Registry `json:"-"`
	// Statuses are the master's servers' live statuses, shared by every
	// list of the master. Required.
	Statuses *Statuses `json:"-"`
	// Gateways returns the game query gateways whose configured servers
	// are listed too, each with its status from the gateway's own cache;
	// the newest first: a server two of them configure is listed from the
	// first. Default: none.
	Gateways func() []*query.Gateway `json:"-"`
	// Now gives the time. Default: time.Now.
	Now func() time.Time `json:"-"`
	// ClientIP gives a request's client address, which decides the
	// servers it is shown (master.Visible). Behind a proxy it must be the
	// client's, not the proxy's: a proxy on loopback would otherwise be
	// shown every loopback and private server. Default: the address of
	// the request's RemoteAddr.
	ClientIP clientaddr.FromRequest `json:"-"`
	// LookupHost resolves the host name of a gateway's server, which
	// decides the clients it is shown to. Default: the system resolver.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error) `json:"-"`
}

// Source names the lists a server list reads: a master's (the servers
// registered with it, shared by every master of the name) and game_query
// handlers' (the servers they are configured with). Whoever builds a List
// finds them by these names (Config.Registry, Statuses, Gateways).
type Source struct {
	// The name of the master whose servers are listed. Default: master.
	Master string `json:"master,omitempty"`
	// The name of the game_query handlers whose servers are listed too,
	// with their statuses from those handlers' caches. Default:
	// game_query.
	GameQuery string `json:"game_query,omitempty"`
}

// Validate checks the names: a master's name and a game_query handler's
// follow those modules' rules, for a name none can have would list nothing
// from it.
func (s Source) Validate() error {
	if err := master.ValidateName(s.Master); err != nil {
		return fmt.Errorf("master: %w", err)
	}
	if err := query.ValidateName(s.GameQuery); err != nil {
		return fmt.Errorf("game_query: %w", err)
	}
	return nil
}

// WithDefaults returns s with the default names where it names none.
func (s Source) WithDefaults() Source {
	return Source{Master: cmp.Or(s.Master, master.DefaultName), GameQuery: cmp.Or(s.GameQuery, query.DefaultName)}
}

// Sizes bound a list's answers in bytes: options of server_list, and of
// server_browser for its servers.json.
type Sizes struct {
	// The most bytes of a server's entry in a page (its status as JSON
	// with its game and region), and of the status kept for it, from
	// 2KiB to 1MiB: a larger status is cut (players, bots and raw
	// variables past it left out, long texts shortened) and marked
	// "truncated": true. Default: 8KiB.
	MaxStatusSize int `json:"max_status_size,omitempty"`
	// The most bytes of one answer of the list, from 16KiB to 64MiB and
	// at least max_status_size and 1KiB: a page ends before the server
	// that would pass it, with fewer servers than its limit, and is
	// marked "truncated": true; the next page starts at offset plus the
	// servers it holds. Default: 1MiB.
	MaxPageSize int `json:"max_page_size,omitempty"`
}

// Bounds Validate checks.
const (
	MaxTTL          = 24 * time.Hour
	MaxQueryTimeout = time.Minute
	MaxMaxQueries   = 1024
	// A status of MinMaxStatusSize holds its name, map, version and
	// addresses at their longest (maxText each) and its counts.
	MinMaxStatusSize = 2 << 10
	MaxMaxStatusSize = 1 << 20
	MinMaxPageSize   = 16 << 10
	MaxMaxPageSize   = 64 << 20
	// pageHead is room enough for a page's fields around its servers:
	// a page holds at least one server within MaxPageSize.
	pageHead = 1 << 10
)

// Validate checks the options' ranges; zero values (the defaults) pass.
// The names are the options'.
func (c Config) Validate() error {
	if err := c.Source.Validate(); err != nil {
		return err
	}
	if err := bounds.First(
		bounds.Duration("ttl", c.TTL.Std(), 0, MaxTTL),
		bounds.Duration("query_timeout", c.QueryTimeout.Std(), 0, MaxQueryTimeout),
		bounds.Int("max_queries", c.MaxQueries, 1, MaxMaxQueries),
	); err != nil {
		return err
	}
	return c.Sizes.Validate()
}

// Validate checks the sizes' ranges; zero values (the defaults) pass.
func (s Sizes) Validate() error {
	if err := bounds.First(
		bounds.Int("max_status_size", s.MaxStatusSize, MinMaxStatusSize, MaxMaxStatusSize),
		bounds.Int("max_page_size", s.MaxPageSize, MinMaxPageSize, MaxMaxPageSize),
	); err != nil {
		return err
	}
	status, page := cmp.Or(s.MaxStatusSize, DefaultMaxStatusSize), cmp.Or(s.MaxPageSize, DefaultMaxPageSize)
	if page < status+pageHead {
		return fmt.Errorf("max_page_size (%d bytes) must be at least max_status_size (%d bytes) and 1KiB", page, status)
	}
	return nil
}

// Statuses are the live statuses of a master's servers, queried with one
// protocol and cached by address: every list of the master reads them,
// so that a server is queried once per TTL however many lists show it.
// Only listed servers have one: the status of a server that left the
// master's list is forgotten (forgetLeft), so that what they hold is
// bounded by the master's max_servers.
type Statuses struct {
	cache *cache.Results[netip.AddrPort, kept]
	query func(ctx context.Context, address string) (*query.Status, error)

	// mu orders the additions of keys to known and the cache (add) with
	// forgetLeft, so that no status is added for a server forgotten.
	mu    sync.Mutex
	known map[netip.AddrPort]bool // the keys the cache may hold: true once queried
}

// kept is a status as a list keeps it: as JSON, cut to a list's
// MaxStatusSize, and the summary the list filters and sorts by (no
// players, bots or raw variables), so that its heap is about its bytes
// (the maps of a decoded status take several times as much).
type kept struct {
	st        *query.Status // the summary
	json      []byte
	truncated bool
	game      games.Game // what its status's gamename tells, if anything (ID "" otherwise)
}

// keep returns st as a list keeps it, cut to size bytes of JSON.
func keep(st *query.Status, size int) (kept, error) {
	st, cut := CutStatus(st, size)
	b, err := json.Marshal(st)
	if err != nil {
		return kept{}, err
	}
	sum := &query.Status{Name: strings.Clone(st.Name), Map: strings.Clone(st.Map), Password: st.Password,
		NumPlayers: st.NumPlayers, MaxPlayers: st.MaxPlayers, Connect: strings.Clone(st.Connect), QueryPort: st.QueryPort,
		Ping: st.Ping, Version: strings.Clone(st.Version), Protocol: strings.Clone(st.Protocol), Address: strings.Clone(st.Address)}
	game, _ := statusGame(st)
	return kept{sum, b, cut, game}, nil
}

// statusGame is the game of the catalogue a status names in its gamename
// (a Quake 3 family server's: OpenArena's says baseoa).
func statusGame(st *query.Status) (games.Game, bool) {
	name, _ := st.Raw["gamename"].(string)
	return games.Default().ByStatusName(st.Protocol, name)
}

// NewStatuses returns an empty cache of statuses queried with query (the
// Quake 3 protocol's Status), on the clock now (nil: time.Now).
func NewStatuses(status func(ctx context.Context, address string) (*query.Status, error), now func() time.Time) (*Statuses, error) {
	c, err := cache.NewResults[netip.AddrPort, kept](master.MaxMaxServers, now)
	if err != nil {
		return nil, err
	}
	return &Statuses{cache: c, query: status, known: map[netip.AddrPort]bool{}}, nil
}

// Close ends the queries running and starts no more.
func (s *Statuses) Close() { s.cache.Close() }

// Len is the number of servers whose status (or a query of it) is held.
func (s *Statuses) Len() int { return s.cache.Len() }

// done is a context already ended: a Get with it answers at once with
// what is cached (starting a load or a refresh as needed) and never waits.
var done = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// get answers at once with addr's cached status under p, the stale one
// included while a refresh runs, starting with load the query or refresh
// the cache calls for; ok is false when nothing usable is cached. ask
// says that load queries (noQuery does not): addr is no longer joined.
// until is when the clock alone changes the answer (zero: only a load's
// end, which changes Generation, does).
func (s *Statuses) get(addr netip.AddrPort, p cache.Policy, load func(context.Context) (kept, error), ask bool) (k kept, until time.Time, ok bool) {
	if res, ok, _ := s.cache.Peek(addr, p); ok {
		return res.Value, res.Until, res.Err == nil && res.Value.st != nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[addr] = s.known[addr] || ask
	res, err := s.cache.Get(done, addr, p, load) // a load started ends in a new Generation
	return res.Value, time.Time{}, err == nil && res.Value.st != nil
}

// Generation changes whenever a status query ends or a status is
// forgotten: what a list built from the statuses, having read it first,
// holds while it is unchanged (and the clock has not reached the
// statuses' until).
func (s *Statuses) Generation() uint64 { return s.cache.Generation() }

// joined returns the servers of listed whose status no query was asked
// for.
func (s *Statuses) joined(listed []master.Server) []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []netip.AddrPort
	for _, r := range listed {
		if !s.known[r.Addr] {
			out = append(out, r.Addr)
		}
	}
	return out
}

// forgetLeft forgets the statuses of the servers not among listed.
func (s *Statuses) forgetLeft(listed []master.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.known) == 0 {
		return
	}
	in := make(map[netip.AddrPort]struct{}, len(listed))
	for _, r := range listed {
		in[r.Addr] = struct{}{}
	}
	for a := range s.known {
		if _, ok := in[a]; !ok {
			s.cache.Invalidate(a)
			delete(s.known, a)
		}
	}
}

// List serves the server list.
type List struct {
	cfg     Config
	policy  cache.Policy
	queries chan struct{}
	life    context.Context
	end     context.CancelFunc
	done    chan struct{} // closed when tendEvery returns

	hostsMu         sync.Mutex
	hosts           map[string]*hostScope // by host name of a gateway's server
	hostsGeneration atomic.Uint64         // lookups ended

	// encoded holds each listed entry's JSON by its status (a cached
	// status is one value until it is refreshed), so that a request
	// encodes only what changed; cleared when it outgrows the list.
	encMu   sync.Mutex
	encoded map[encKey][]byte

	answers        answers
	maxAnswerBytes int // the bytes of answers held: maxAnswerBytes
}

type encKey struct {
	st                         *query.Status
	game, gameID, join, region string
}

// hostScope is what a host name resolved to, for TTL.
type hostScope struct {
	addrs     []netip.Addr // nil: not resolved (yet)
	expires   time.Time
	resolving bool
}

// New returns a List with cfg.
func New(cfg Config) (*List, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Registry == nil || cfg.Statuses == nil {
		return nil, fmt.Errorf("serverlist: no registry or statuses")
	}
	cfg.TTL = cmp.Or(cfg.TTL, duration.Duration(DefaultTTL))
	cfg.QueryTimeout = cmp.Or(cfg.QueryTimeout, duration.Duration(DefaultQueryTimeout))
	cfg.MaxQueries = cmp.Or(cfg.MaxQueries, DefaultMaxQueries)
	cfg.MaxStatusSize = cmp.Or(cfg.MaxStatusSize, DefaultMaxStatusSize)
	cfg.MaxPageSize = cmp.Or(cfg.MaxPageSize, DefaultMaxPageSize)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Gateways == nil {
		cfg.Gateways = func() []*query.Gateway { return nil }
	}
	if cfg.LookupHost == nil {
		cfg.LookupHost = netaddr.LookupHost
	}
	life, end := context.WithCancel(context.Background())
	l := &List{
		cfg: cfg,
		// A status past TTL is served while one refresh runs, and after a
		// failed one (retried every TTL), for as long as its server is
		// listed (its status is forgotten when it leaves): a list read
		// less often than every TTL, or a status datagram lost, shows
		// the last status, never the heartbeat's, which is older (a
		// server heartbeats every few minutes).
		policy: cache.Policy{TTL: cfg.TTL.Std(), StaleWhileRevalidate: staleWhileRefresh, StaleIfError: staleWhileRefresh,
			NegativeTTL: cfg.TTL.Std(), LoadTimeout: cfg.QueryTimeout.Std()},
		queries: make(chan struct{}, cfg.MaxQueries),
		life:    life,
		end:     end,
		done:    make(chan struct{}),
		hosts:   map[string]*hostScope{},
		encoded: map[encKey][]byte{},

		maxAnswerBytes: maxAnswerBytes,
	}
	go l.tendEvery(min(max(cfg.TTL.Std(), time.Second), maxTendPeriod))
	return l, nil
}

// staleWhileRefresh is how long past its TTL a status is served while it
// is refreshed or after a refresh failed: as long as a server may stay
// listed.
const staleWhileRefresh = 365 * 24 * time.Hour

// maxTendPeriod is the longest time, when the list is not read, before
// the statuses of servers that left the list are forgotten and those of
// servers that joined it queried: every TTL, from 1s to maxTendPeriod.
const maxTendPeriod = 10 * time.Second

// tendEvery forgets, every period until Close, the statuses of the
// servers that left the master's list, and starts the first query of
// the servers that joined it, so that a new server is listed with its
// status (its bots, its version) from the first request after it, not
// with its heartbeat's data until a request has queried it. Refreshes are
// left to requests: a list nobody reads queries a server once.
func (l *List) tendEvery(period time.Duration) {
	defer close(l.done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-l.life.Done():
			return
		case <-t.C:
			regs := l.cfg.Registry.Servers(nil)
			l.cfg.Statuses.forgetLeft(regs)
			for _, a := range l.cfg.Statuses.joined(regs) {
				l.cfg.Statuses.get(a, l.policy, l.load(a), true)
			}
		}
	}
}

// Close starts no more status queries; those running end at their
// timeout (the caches they fill are shared).
func (l *List) Close() {
	l.end()
	<-l.done
}

// Server is one entry of the list: a status in the game query result
// shape, its game's name in the game catalogue where it can be told
// (else the game name the server registered with, or its status
// names), and its region where known. Truncated marks a status cut to a
// list's MaxStatusSize. A status the list keeps is a summary (no
// players, bots or raw variables) beside its whole encoding, which is
// what the entry encodes.
type Server struct {
	Status *query.Status
	Game   string
	// GameID is the game's ID in the game catalogue, "" when the game is
	// not told (Game is then what the server registered with, if
	// anything).
	GameID string
	// Join is the URL that starts the game and joins the server, made of
	// its address alone (games.Game.JoinURL); "" when the game has none.
	Join      string
	Region    string
	Truncated bool

	json []byte // Status's whole encoding, if kept
}

// MarshalJSON writes the status with "game" and "region" beside its
// fields, "game_id" and "join" where known, and "truncated": true for a
// status cut.
func (s Server) MarshalJSON() ([]byte, error) {
	b, err := s.statusJSON()
	if err != nil || len(b) < 2 {
		return b, err
	}
	game, _ := json.Marshal(s.Game)
	region, _ := json.Marshal(s.Region)
	out := append(b[:len(b)-1:len(b)-1], `,"game":`...)
	out = append(out, game...)
	out = append(out, `,"region":`...)
	out = append(out, region...)
	if s.GameID != "" {
		id, _ := json.Marshal(s.GameID)
		out = append(append(out, `,"game_id":`...), id...)
	}
	if s.Join != "" {
		join, _ := json.Marshal(s.Join)
		out = append(append(out, `,"join":`...), join...)
	}
	if s.Truncated {
		out = append(out, `,"truncated":true`...)
	}
	return append(out, '}'), nil
}

// statusJSON is the encoding of s's status.
func (s Server) statusJSON() ([]byte, error) {
	if s.json != nil {
		return s.json, nil
	}
	return json.Marshal(s.Status)
}

// Page is the answer: the servers matching the filters, sorted, from
// Offset, at most Limit of them; Total counts every match. Truncated
// marks a page that ends before Limit because of its size in bytes
// (Config.MaxPageSize).
type Page struct {
	Total     int      `json:"total"`
	Offset    int      `json:"offset"`
	Limit     int      `json:"limit"`
	Servers   []Server `json:"servers"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Servers returns every listed server with its status: the live one where
// cached (fresh, or stale while one refresh runs), otherwise what its last
// infoResponse said, while a query (at most MaxQueries at once) fetches
// the live one.
// Only servers visible to client are listed (master.Visible: no loopback
// or private address to a client farther away).
//
// The servers of the gateways follow, each once (a server the master
// lists too is listed once, with the gateway's status): the live status
// where cached, as a GET of it through the gateway would be answered,
// otherwise its configured name and address while a query (taking one of
// the same MaxQueries) fetches it through the gateway. A gateway's server
// is shown under master.Visible's rule too: one named by a host name by
// every address the name resolves to (hostVisible).
func (l *List) Servers(client netip.Addr) []Server { return l.servers(client, true, new(horizon)) }

// Cached is Servers as the list holds them, starting no status query: a
// status cached, stale or not, else the server's last infoResponse (a
// gateway's server: its name and address). What samples the list on a
// schedule of its own reads it so, and costs no queries.
func (l *List) Cached(client netip.Addr) []Server { return l.servers(client, false, new(horizon)) }

// horizon is the earliest time the clock alone changes what servers
// answered: a status to refresh, a server to expire, a name to resolve
// again. Zero: none (only the inputs' generations change it).
type horizon struct{ at time.Time }

// by brings h to t if t is earlier; a zero t sets nothing.
func (h *horizon) by(t time.Time) {
	if !t.IsZero() && (h.at.IsZero() || t.Before(h.at)) {
		h.at = t
	}
}

// servers is Servers (ask) or Cached, noting in h when the clock changes
// its answer.
func (l *List) servers(client netip.Addr, ask bool, h *horizon) []Server {
	now := l.cfg.Now()
	regs := l.cfg.Registry.Servers(nil)
	l.cfg.Statuses.forgetLeft(regs)
	gateways := l.cfg.Gateways()
	var configured []query.Listed
	type source struct {
		gw *query.Gateway
		at int // index in configured
	}
	byAddr := map[string]source{}
	for _, gw := range gateways {
		from := len(configured)
		configured = gw.Listed(configured)
		for i := from; i < len(configured); i++ {
			key := addrKey(configured[i].Address)
			if _, dup := byAddr[key]; !dup { // else listed from a newer gateway
				byAddr[key] = source{gw, i}
			}
		}
	}
	out := make([]Server, 0, len(regs)+len(configured))
	registered := map[string]string{} // registered game names of configured servers
	for _, r := range regs {
		if !master.Visible(r.Addr.Addr(), client) {
			continue
		}
		h.by(now.Add(r.Expires)) // its game name leaves with it, a gateway's server's too
		if _, dup := byAddr[r.Addr.String()]; dup {
			registered[r.Addr.String()] = r.GameName
			continue
		}
		k := l.status(r, ask, h)
		e := Server{Status: k.st, Game: r.GameName, Truncated: k.truncated, json: k.json}
		game := k.game
		if game.ID == "" { // its status tells none (or is not queried yet): what it registered with
			game, _ = games.Default().ByStatusName(k.st.Protocol, r.GameName)
		}
		e.setGame(game, r.Addr.Addr().String(), int(r.Addr.Port()))
		out = append(out, e)
	}
	for key, src := range byAddr {
		c := configured[src.at]
		if ap, err := netip.ParseAddrPort(c.Address); err == nil {
			if !master.Visible(ap.Addr(), client) {
				continue
			}
		} else if !l.hostVisible(c.Address, client, h) {
			continue
		}
		st := l.configuredStatus(src.gw, c, ask, h)
		e := Server{Status: st, Game: registered[key], Region: c.Region}
		if e.Game == "" {
			if g, ok := st.Raw["gamename"].(string); ok && len(g) <= wiremaster.MaxGameName {
				e.Game = g
			}
		}
		game, ok := games.Default().Lookup(c.Game)
		if !ok {
			if game, ok = statusGame(st); !ok {
				game, _ = games.Default().ByStatusName(c.Protocol, registered[key])
			}
		}
		host, port, _ := netaddr.SplitHostPort(c.Address)
		e.setGame(game, host, int(port))
		out = append(out, e)
	}
	return out
}

// setGame names s's game g, if it is one (ID not ""), and gives it g's
// join URL for host and port, the address s is listed at.
func (s *Server) setGame(g games.Game, host string, port int) {
	if g.ID == "" {
		return
	}
	s.Game, s.GameID, s.Join = g.Name, g.ID, g.JoinURL(host, port)
}

// addrKey is the key two spellings of one address share: an IP address
// and port as netip prints them, else the address as given.
func addrKey(address string) string {
	if ap, err := netip.ParseAddrPort(address); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
	}
	return address
}

// hostVisible reports whether the server at address (host:port, a host
// name) may be shown to client: only if every address the name resolved
// to may be (a name with one private address among public ones is as
// private as that one). A name not resolved yet, or that does not
// resolve, is taken for loopback: shown to loopback clients only, while a
// lookup (one of MaxQueries) runs; a lookup is reused for TTL. localhost
// and its subdomains are loopback without a lookup. A lookup's end
// changes hostsGeneration; hz is brought to when the lookup is due again.
func (l *List) hostVisible(address string, client netip.Addr, hz *horizon) bool {
	host, _, err := netaddr.SplitHostPort(address)
	if err != nil {
		host = address
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	loopback := netip.IPv6Loopback()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return master.Visible(loopback, client)
	}
	now := l.cfg.Now()
	l.hostsMu.Lock()
	h := l.hosts[host]
	if h == nil {
		h = &hostScope{}
		l.hosts[host] = h // bounded: host names come from the configuration
	}
	addrs := h.addrs
	if !h.resolving && !now.Before(h.expires) {
		h.resolving = l.startQuery(func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, l.cfg.QueryTimeout.Std())
			defer cancel()
			got, err := l.cfg.LookupHost(ctx, host)
			l.hostsMu.Lock()
			defer l.hostsMu.Unlock()
			defer l.hostsGeneration.Add(1) // after the addresses are set
			h.resolving = false
			h.expires = l.cfg.Now().Add(l.cfg.TTL.Std())
			if err != nil || len(got) == 0 {
				// Keep the addresses it last had (none if it never
				// resolved): one failed lookup must not hide a public
				// server for a whole ttl.
				return
			}
			h.addrs = got
		})
		if !h.resolving {
			hz.by(now) // no query slot free: tried again at the next request
		}
	} else if !h.resolving {
		hz.by(h.expires)
	}
	l.hostsMu.Unlock()
	if len(addrs) == 0 {
		return master.Visible(loopback, client)
	}
	for _, a := range addrs {
		if !master.Visible(a, client) {
			return false
		}
	}
	return true
}

// startQuery runs load in the background if one of MaxQueries is free,
// and reports whether it does.
func (l *List) startQuery(load func(ctx context.Context)) bool {
	if l.life.Err() != nil {
		return false
	}
	select {
	case l.queries <- struct{}{}:
		go func() {
			defer func() { <-l.queries }()
			load(l.life)
		}()
		return true
	default:
		return false
	}
}

// status is r's status: the cached one, stale or not (a refresh of a
// stale one starts if ask), else what its last infoResponse said (while a
// query starts if ask). A query or refresh takes one of MaxQueries; when
// none is free it is tried again at the next request, and meanwhile a
// stale status is still served.
func (l *List) status(r master.Server, ask bool, h *horizon) kept {
	if l.life.Err() == nil {
		load := noQuery
		if ask {
			load = l.load(r.Addr)
		}
		k, until, ok := l.cfg.Statuses.get(r.Addr, l.policy, load, ask)
		h.by(until)
		if ok {
			return k
		}
	} else if res, ok, _ := l.cfg.Statuses.cache.Peek(r.Addr, l.policy); ok && res.Err == nil && res.Value.st != nil {
		return res.Value
	}
	return kept{st: fromInfo(r)}
}

// errBusy is a query not made: MaxQueries run.
var errBusy = errors.New("serverlist: max_queries running")

// noQuery is the load of a status that is not to be queried: the cache
// keeps what it has.
func noQuery(context.Context) (kept, error) { return kept{}, cache.Uncached(errNoQuery) }

var errNoQuery = errors.New("serverlist: not queried")

// load returns the query of addr's status for the statuses' cache: it
// runs if one of MaxQueries is free (else the cache keeps what it has and
// the next request tries again), and cuts the status to MaxStatusSize.
func (l *List) load(addr netip.AddrPort) func(context.Context) (kept, error) {
	return func(ctx context.Context) (kept, error) {
		select {
		case l.queries <- struct{}{}:
			defer func() { <-l.queries }()
		default:
			return kept{}, cache.Uncached(errBusy)
		}
		st, err := l.cfg.Statuses.query(ctx, addr.String())
		if err != nil {
			return kept{}, err
		}
		if st == nil {
			return kept{}, errors.New("serverlist: no status")
		}
		return keep(st, l.cfg.MaxStatusSize)
	}
}

// configuredStatus is the status of a gateway's server c: the cached one,
// else its name and address while a query fetches it. h is brought to
// when the clock alone changes it.
func (l *List) configuredStatus(gw *query.Gateway, c query.Listed, ask bool, h *horizon) *query.Status {
	st, until, ok, loading := gw.CachedStatus(c.Name)
	h.by(until)
	if ok {
		return st
	}
	if ask && !loading && !l.startQuery(func(ctx context.Context) { gw.LoadStatus(ctx, c.Name) }) {
		h.by(l.cfg.Now()) // no query slot free: tried again at the next request
	}
	st = &query.Status{Name: c.Name, Protocol: c.Protocol, Players: []query.Player{}, Bots: []query.Player{}, Raw: map[string]any{}, Ping: UnknownPing}
	st.SetAddress(c.Address, 0)
	return st
}

// UnknownPing is the ping of a server listed before any answer of its own
// (from its heartbeat, or its configured name): no round trip was
// measured, where 0 is a real one (on a LAN, under a millisecond).
const UnknownPing = -1

// fromInfo is a server's status as its last infoResponse gave it.
func fromInfo(r master.Server) *query.Status {
	st := &query.Status{Protocol: "quake3", NumPlayers: r.Clients, MaxPlayers: r.MaxClients, Ping: UnknownPing,
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
// region, not_empty, not_full, no_password (Steam's master server
// filters), sort (name, map, game, region, players, maxplayers, ping; a
// leading - for descending), offset and limit.
type Filter struct {
	Game, Map, Region             string
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
	f.Game, f.Map, f.Region = get("game"), get("map"), get("region")
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
		case "name", "map", "game", "region", "players", "maxplayers", "ping":
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
		case f.Game != "" && !strings.EqualFold(s.Game, f.Game) && !strings.EqualFold(s.GameID, f.Game),
			f.Map != "" && !strings.EqualFold(st.Map, f.Map),
			f.Region != "" && !strings.EqualFold(s.Region, f.Region),
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
		case "region":
			return strings.ToLower(s.Region), 0
		case "players":
			return "", int64(s.Status.NumPlayers)
		case "maxplayers":
			return "", int64(s.Status.MaxPlayers)
		case "ping": // unknown after every known one
			if s.Status.Ping < 0 {
				return "", math.MaxInt64
			}
			return "", s.Status.Ping
		}
		return strings.ToLower(s.Status.Name), 0
	}
	slices.SortStableFunc(keep, func(a, b Server) int {
		as, an := key(a)
		bs, bn := key(b)
		c := strings.Compare(as, bs)
		c = cmp.Or(c, int(min(max(an-bn, -1), 1)))
		if f.Desc && (f.Sort != "ping" || (an != math.MaxInt64 && bn != math.MaxInt64)) {
			c = -c // an unknown ping stays last, either way
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
	from := l.cfg.ClientIP
	if from == nil {
		from = clientaddr.RemoteAddr
	}
	if a := from(r); a.IsValid() {
		return a
	}
	return netip.IPv4Unspecified() // unknown: public
}

// ServeHTTP answers GET and HEAD at any path (so the list works under a
// path prefix: handle_path /servers/*) with the Page the query string asks
// for, as JSON with a strong ETag; If-None-Match gets 304. Answers are
// encoded once per query and client class for as long as what they are
// made of is unchanged (answers.go).
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
	ans, err := l.answer(classOf(l.Client(r)), f)
	if err != nil {
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	body, etag, length := ans.body, ans.etag, ans.contentLength
	gz := ans.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gz {
		body, etag, length = ans.gz, ans.gzETag, ans.gzLength
	}
	h, v := w.Header(), new(cache.HeaderValues)
	v.Set(h, 0, "Etag", etag)
	v.Set(h, 1, "Cache-Control", "no-cache")
	v.Set(h, 2, "Vary", "Accept-Encoding")
	if cache.IfNoneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	v.Set(h, 3, "Content-Type", "application/json")
	v.Set(h, 4, "Content-Length", length)
	if gz {
		v.Set(h, 5, "Content-Encoding", "gzip")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
	return http.StatusOK
}

// encode is json.Marshal(p), reusing the encoding of each server whose
// status is the one encoded before, with each server's entry cut to
// MaxStatusSize and the page ended before MaxPageSize (Page.Truncated).
// Encodings of statuses no longer current (refreshed, or of servers that
// left) are dropped when they outnumber current's twice over.
func (l *List) encode(p Page, current []Server) ([]byte, error) {
	const end = `],"truncated":true}`
	body := fmt.Appendf(make([]byte, 0, 4096), `{"total":%d,"offset":%d,"limit":%d,"servers":[`, p.Total, p.Offset, p.Limit)
	l.encMu.Lock()
	defer l.encMu.Unlock()
	if len(l.encoded) > 2*len(current)+64 {
		l.forgetEncodings(current)
	}
	for i, s := range p.Servers {
		k := encKey{s.Status, s.Game, s.GameID, s.Join, s.Region}
		b, ok := l.encoded[k]
		if !ok {
			var err error
			if b, err = l.encodeServer(s); err != nil {
				return nil, err
			}
			l.encoded[k] = b
		}
		if i > 0 && len(body)+1+len(b)+len(end) > l.cfg.MaxPageSize {
			return append(body, end...), nil
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, b...)
	}
	return append(body, "]}"...), nil
}

// forgetEncodings drops the encodings of servers not in current (they
// left, or their statuses were refreshed). l.encMu is held.
func (l *List) forgetEncodings(current []Server) {
	keep := make(map[encKey]struct{}, len(current))
	for _, s := range current {
		keep[encKey{s.Status, s.Game, s.GameID, s.Join, s.Region}] = struct{}{}
	}
	for k := range l.encoded {
		if _, ok := keep[k]; !ok {
			delete(l.encoded, k)
		}
	}
}

// encodeServer is s's entry, cut to MaxStatusSize.
func (l *List) encodeServer(s Server) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil || len(b) <= l.cfg.MaxStatusSize {
		return b, err
	}
	status, err := s.statusJSON()
	if err != nil {
		return nil, err
	}
	whole := s.Status
	if s.json != nil { // a summary: the whole status is its encoding
		whole = new(query.Status)
		if err := json.Unmarshal(s.json, whole); err != nil {
			return nil, err
		}
	}
	// What game, region and the mark add to the status.
	extra := len(b) - len(status)
	if !s.Truncated {
		extra += len(`,"truncated":true`)
	}
	s.Status, _ = CutStatus(whole, l.cfg.MaxStatusSize-extra)
	s.Truncated, s.json = true, nil
	return json.Marshal(s)
}
