package query

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unicode"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/netaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Server is a game server the gateway may query (ServerOptions.Server
// makes one from its configuration).
type Server struct {
	Name     string
	Address  string // host:port
	Protocol Protocol
	// Commands are the commands forwarded from HTTP besides the normalised
	// status (which is always allowed). Nil: the protocol's read-only
	// commands (see ReadOnlyCommander).
	Commands []string
	// Region is where the server is, as a server list shows it; "" is
	// unknown.
	Region string
	// Game is the game's ID in the game catalogue (handlers/games), as
	// configured; "" when the protocol alone was named.
	Game string
}

// AdHocGame is how ad-hoc targets of one game are queried.
type AdHocGame struct {
	// Protocol speaks to the game's servers.
	Protocol Protocol
	// QueryPort returns the port to query for a target whose address
	// names port given (0: none), or an error saying why there is none.
	QueryPort func(given int) (int, error)
}

// Config is the behaviour of a Gateway. The tags of the options whose
// ranges Validate checks name them as the game_query handler's options,
// by which a Caddyfile parser finds their ranges.
type Config struct {
	// Servers by name.
	Servers map[string]Server
	// AdHoc is the protocol for targets given as host:port instead of a
	// name; nil refuses them.
	AdHoc Protocol
	// Games finds the protocol and query port of ad-hoc targets given by
	// game ID (GET /{game}/{host[:port]}[/{command}]); nil refuses them.
	// They are ad-hoc targets in every other way: AllowTargets and the
	// ad-hoc limits apply.
	Games func(id string) (AdHocGame, *Error)
	// The options the game_query module's JSON holds as they are.
	Options
	// ClientIP gives a request's client address. Default: the address of
	// the request's RemoteAddr.
	ClientIP clientaddr.FromRequest
	// Log is told what went wrong when a client is answered in words only
	// (an unreachable server, an unusable answer). Default: nothing.
	Log func(server string, err error)
	// OnUpstream is called for every upstream query (metrics), with the
	// name of the configured server asked, or "" for an ad-hoc target, and
	// how long the query took. Names come from the configuration only.
	OnUpstream func(server string, took time.Duration)
	// Now gives the time. Default: time.Now.
	Now func() time.Time
}

// Options are the gateway's options as the game_query handler's JSON and
// Caddyfile name them (the module embeds them). Zero values mean the
// defaults.
type Options struct {
	// Networks (CIDRs or IPs) that ad-hoc targets must resolve into (every
	// address of a name must be inside), so the gateway cannot be used to
	// send datagrams to arbitrary hosts. Required with ad_hoc and
	// ad_hoc_games. Default: none.
	AllowTargets []string `json:"allow_targets,omitempty"`
	// The games whose servers may be asked ad hoc by game ID, as
	// /{game}/{host[:port]}[/{command}]: GameDig's game IDs (or v4 IDs),
	// or "*" alone for every game (a game this build cannot query answers
	// 501 naming its protocol). Such targets are allowed only inside
	// allow_targets. Default: none.
	AdHocGames []string `json:"ad_hoc_games,omitempty"`
	// Cache lifetime per command name ("status" is the normalised status;
	// Caddyfile: one ttl line each), at most 24h; 0 is default_ttl.
	// Default: default_ttl for every command.
	TTL map[string]duration.Duration `json:"ttl,omitempty"`
	// Cache lifetime of other commands than those ttl names, at most 24h.
	// Default: 5s.
	DefaultTTL duration.Duration `json:"default_ttl,omitempty"`
	// How long past its lifetime a result is served while one refresh
	// runs, at most 24h (cache.Policy). Default: 10s.
	StaleWhileRevalidate duration.Duration `json:"stale_while_revalidate,omitempty"`
	// How long past its lifetime a result is served when the server fails
	// to answer, at most 24h. Default: 1m.
	StaleIfError duration.Duration `json:"stale_if_error,omitempty"`
	// How long a failure (a timeout, an unusable answer) is cached, at
	// most 24h. Default: 2s.
	NegativeTTL duration.Duration `json:"negative_ttl,omitempty"`
	// Most upstream queries per second per server. Each server has two
	// such budgets: one for the status and argument-free commands, one for
	// commands with arguments, so varying arguments cannot starve the
	// status. Default: 10.
	UpstreamRate float64 `json:"upstream_rate,omitempty"`
	// Upstream queries per server allowed at once. Default: one second of
	// upstream_rate, rounded up.
	UpstreamBurst int `json:"upstream_burst,omitempty"`
	// Ad-hoc upstream work (name lookups and queries, each holding a
	// socket) running at once, over all clients; past it ad-hoc requests
	// that need such work answer 503. Answers from the cache take none.
	// Default: 32.
	MaxAdHoc int `json:"max_ad_hoc_queries,omitempty"`
	// Ad-hoc upstream work running at once for one client network (an
	// IPv4 /24, an IPv6 /48), so that a few networks asking targets that
	// never answer cannot hold every slot; past it that network's ad-hoc
	// requests that need such work answer 429. Default: 4.
	MaxAdHocPerNetwork int `json:"max_ad_hoc_queries_per_network,omitempty"`
	// Most ad-hoc requests per second per client (Caddy's client IP,
	// honouring trusted_proxies; IPv6 clients by client_ipv6_prefix);
	// past it they answer 429 with Retry-After. Default: 2.
	AdHocRate float64 `json:"ad_hoc_rate,omitempty"`
	// Ad-hoc requests per client allowed at once. Default: 10.
	AdHocBurst int `json:"ad_hoc_burst,omitempty"`
	// The prefix length, in bits, that makes one IPv6 client for the
	// per-client limits, in [32, 128]. Default: 64.
	ClientIPv6Prefix int `json:"client_ipv6_prefix,omitempty"`
	// Time allowed for one upstream query, retries included, at most 1h.
	// Default: 3s.
	QueryTimeout duration.Duration `json:"query_timeout,omitempty"`
	// Most results cached, in each of two caches: named servers' status
	// and argument-free commands, and everything else (commands with
	// arguments, ad-hoc targets), so that neither can evict the other's
	// results. Default: 10000.
	MaxEntries int `json:"max_entries,omitempty"`
	// Most queries (servers × commands) in one batch. Default: 100.
	MaxBatch int `json:"max_batch_queries,omitempty"`
	// Queries of one batch run at once. Default: 16.
	BatchConcurrency int `json:"batch_concurrency,omitempty"`
	// Largest batch request body, in bytes. Default: 65536.
	MaxBody int64 `json:"max_body,omitempty"`
	// Most bytes of results in one batch answer (the answer is streamed,
	// each result as it is ready; one that would pass this is answered
	// with a short 413 error instead), in [1024, 67108864]. Default:
	// 1048576 (1 MiB).
	MaxBatchAnswer int64 `json:"max_batch_answer_size,omitempty"`
	// Most batches per second per client network (an IPv4 /24, an IPv6
	// /48); past it they answer 429 with Retry-After. Default: 2.
	BatchRate float64 `json:"batch_rate,omitempty"`
	// Batches per client network allowed at once. Default: 10.
	BatchBurst int `json:"batch_burst,omitempty"`
	// server_list handlers naming this name list the servers configured
	// here, with their statuses from this handler's cache, at most 64
	// bytes without spaces. Default: game_query.
	Name string `json:"name,omitempty"`
}

// ServerOptions are a named game server's options as the game_query
// handler's JSON (servers) and Caddyfile give them: the module embeds them
// beside the query protocol it loads, and ServerOptions.Server makes the
// gateway's Server of them.
type ServerOptions struct {
	// The server's query address, host:port; with game, its game address
	// (host:port, the port players join, or host alone: the game's query
	// port). Required.
	Address string `json:"address,omitempty"`
	// The game, by GameDig's game ID or v4 ID (gamegate games lists
	// them): its protocol and query port follow from it, and a game this
	// build cannot query is refused at load. Default: none (the protocol
	// says).
	Game string `json:"game,omitempty"`
	// The commands forwarded from HTTP besides the normalised status,
	// which is always allowed (Caddyfile: commands <server> <command>...).
	// Default: the protocol's read-only commands (gqp: identify, echo,
	// extensions and its status_command); commands that may change a
	// game's state (gqp's challenge, validate and protected commands,
	// freeciv's join) are forwarded only if listed here.
	Commands []string `json:"commands,omitempty"`
	// Where the server is, as server_list shows it (and filters it by):
	// at most 64 bytes, no spaces or control characters. Default: none
	// (unknown).
	Region string `json:"region,omitempty"`
}

// Server returns the server name these options configure, queried with p
// at address: Address, or with Game the query address of the game's
// server at Address.
func (o ServerOptions) Server(name, address string, p Protocol) Server {
	return Server{Name: name, Address: address, Protocol: p, Commands: o.Commands, Region: o.Region, Game: o.Game}
}

// allowTargets returns the networks of AllowTargets.
func (o *Options) allowTargets() ([]netip.Prefix, error) {
	return netaddr.ParsePrefixes("allow_targets", o.AllowTargets)
}

// DefaultName is the name of a game_query handler given none, and the
// handler whose servers a server list or browser lists unless given
// another.
const DefaultName = "game_query"

// MaxName bounds a game_query handler's name, in bytes.
const MaxName = 64

// ValidateName checks a game_query handler's name (the name server lists
// and browsers find its servers by): at most MaxName bytes, without
// spaces or control characters; "" is DefaultName.
func ValidateName(name string) error {
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) || len(name) > MaxName {
		return fmt.Errorf("name %q: at most %d bytes, without spaces or control characters", name, MaxName)
	}
	return nil
}

// Defaults of Config: what a zero field means.
const (
	DefaultDefaultTTL           = 5 * time.Second
	DefaultStaleWhileRevalidate = 10 * time.Second
	DefaultStaleIfError         = time.Minute
	DefaultNegativeTTL          = 2 * time.Second
	DefaultUpstreamRate         = 10
	DefaultQueryTimeout         = 3 * time.Second
	DefaultMaxEntries           = 10000
	DefaultMaxBatch             = 100
	DefaultBatchConcurrency     = 16
	DefaultMaxBody              = 64 << 10
	DefaultMaxBatchAnswer       = 1 << 20
	DefaultBatchRate            = 2
	DefaultBatchBurst           = 10
	DefaultMaxAdHoc             = 32
	DefaultMaxAdHocPerNetwork   = 4
	DefaultAdHocRate            = 2
	DefaultAdHocBurst           = 10
)

// Bounds Validate checks (the lower bound of a count is 1, of a duration
// 0; 0 is the default). The durations' bounds keep every duration derived
// from them far from time.Duration's limit.
const (
	MaxTTL              = 24 * time.Hour // default_ttl, ttl, stale_*, negative_ttl
	MaxQueryTimeout     = time.Hour
	MaxMaxEntries       = 1 << 30
	MaxMaxBatch         = 100000
	MaxBatchConcurrency = 1024
	MaxMaxBody          = 64 << 20
	MinMaxBatchAnswer   = 1 << 10
	MaxMaxBatchAnswer   = 64 << 20
	MaxMaxAdHoc         = 1 << 16 // max_ad_hoc_queries, max_ad_hoc_queries_per_network
	MaxAdHocBurst       = 1 << 20
	MaxBurst            = ratelimit.MaxBurst // upstream_burst, batch_burst
	MaxRegion           = 64                 // a server's Region, in bytes
)

// Validate checks cfg: every option's range, named as the game_query
// handler's options are; zero values (the defaults) pass.
func (c Config) Validate() error {
	if _, err := c.allowTargets(); err != nil {
		return err
	}
	return c.validateOptions()
}

// validateOptions is Validate but for the parsing of AllowTargets.
func (c Config) validateOptions() error {
	if (len(c.AdHocGames) > 0 || c.Games != nil) && len(c.AllowTargets) == 0 {
		return errors.New("ad_hoc_games needs allow_targets: the networks ad-hoc targets may be in")
	}
	if err := ValidateName(c.Name); err != nil {
		return err
	}
	for name, s := range c.Servers {
		if err := s.validate(name); err != nil {
			return err
		}
	}
	if c.AdHoc != nil && len(c.AllowTargets) == 0 {
		return errors.New("ad_hoc needs allow_targets: the networks ad-hoc targets may be in")
	}
	for cmd, d := range c.TTL {
		if cmd == "" {
			return errors.New("ttl: needs command names, got an empty one")
		}
		if err := bounds.Duration(fmt.Sprintf("ttl %q", cmd), d.Std(), 0, MaxTTL); err != nil {
			return err
		}
	}
	return bounds.First(
		bounds.Duration("default_ttl", c.DefaultTTL.Std(), 0, MaxTTL),
		bounds.Duration("stale_while_revalidate", c.StaleWhileRevalidate.Std(), 0, MaxTTL),
		bounds.Duration("stale_if_error", c.StaleIfError.Std(), 0, MaxTTL),
		bounds.Duration("negative_ttl", c.NegativeTTL.Std(), 0, MaxTTL),
		ratelimit.ValidateOptions("upstream_rate", "upstream_burst", c.UpstreamRate, c.UpstreamBurst, MaxBurst),
		bounds.Duration("query_timeout", c.QueryTimeout.Std(), 0, MaxQueryTimeout),
		bounds.Int("max_entries", int64(c.MaxEntries), 1, MaxMaxEntries),
		bounds.Int("max_batch_queries", int64(c.MaxBatch), 1, MaxMaxBatch),
		bounds.Int("batch_concurrency", int64(c.BatchConcurrency), 1, MaxBatchConcurrency),
		bounds.Int("max_body", c.MaxBody, 1, MaxMaxBody),
		bounds.Int("max_batch_answer_size", c.MaxBatchAnswer, MinMaxBatchAnswer, MaxMaxBatchAnswer),
		ratelimit.ValidateOptions("batch_rate", "batch_burst", c.BatchRate, c.BatchBurst, MaxBurst),
		bounds.Int("max_ad_hoc_queries", int64(c.MaxAdHoc), 1, MaxMaxAdHoc),
		bounds.Int("max_ad_hoc_queries_per_network", int64(c.MaxAdHocPerNetwork), 1, MaxMaxAdHoc),
		ratelimit.ValidateOptions("ad_hoc_rate", "ad_hoc_burst", c.AdHocRate, c.AdHocBurst, MaxAdHocBurst),
		clientaddr.ValidateIPv6Prefix("client_ipv6_prefix", c.ClientIPv6Prefix),
	)
}

// validate checks a server named name.
func (s Server) validate(name string) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("servers: %q is not a server name (one path segment)", name)
	}
	if _, err := netip.ParseAddrPort(s.Address); err != nil {
		if _, _, err := netaddr.SplitHostPort(s.Address); err != nil && !FindsPort(s.Protocol, s.Address) {
			return fmt.Errorf("server %q: address %q is not host:port", name, s.Address)
		}
	}
	for _, cmd := range s.Commands {
		if !IsCommandName(cmd) {
			return fmt.Errorf("server %q: commands: %q is not a command name", name, cmd)
		}
	}
	if s.Region != "" {
		if err := ValidateRegion(s.Region); err != nil {
			return fmt.Errorf("server %q: region: %w", name, err)
		}
	}
	return nil
}

// ValidateRegion checks a server's region: at most MaxRegion bytes,
// without spaces or control characters.
func ValidateRegion(r string) error {
	switch {
	case r == "":
		return errors.New("empty")
	case len(r) > MaxRegion:
		return fmt.Errorf("'%.16s…' is longer than %d bytes", r, MaxRegion)
	case strings.ContainsFunc(r, func(c rune) bool { return c <= ' ' || c == 0x7f || !unicode.IsPrint(c) }):
		return fmt.Errorf("'%s' holds spaces or control characters", r)
	}
	return nil
}

// IsCommandName reports whether s can name a command: one path segment of
// printable characters.
func IsCommandName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r == 0x7F || r == '/' })
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.Name = cmp.Or(c.Name, DefaultName)
	c.DefaultTTL = cmp.Or(c.DefaultTTL, duration.Duration(DefaultDefaultTTL))
	c.StaleWhileRevalidate = cmp.Or(c.StaleWhileRevalidate, duration.Duration(DefaultStaleWhileRevalidate))
	c.StaleIfError = cmp.Or(c.StaleIfError, duration.Duration(DefaultStaleIfError))
	c.NegativeTTL = cmp.Or(c.NegativeTTL, duration.Duration(DefaultNegativeTTL))
	c.QueryTimeout = cmp.Or(c.QueryTimeout, duration.Duration(DefaultQueryTimeout))
	c.MaxEntries = cmp.Or(c.MaxEntries, DefaultMaxEntries)
	c.MaxBatch = cmp.Or(c.MaxBatch, DefaultMaxBatch)
	c.BatchConcurrency = cmp.Or(c.BatchConcurrency, DefaultBatchConcurrency)
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	c.MaxBatchAnswer = cmp.Or(c.MaxBatchAnswer, DefaultMaxBatchAnswer)
	c.MaxAdHoc = cmp.Or(c.MaxAdHoc, DefaultMaxAdHoc)
	c.MaxAdHocPerNetwork = cmp.Or(c.MaxAdHocPerNetwork, DefaultMaxAdHocPerNetwork)
	c.UpstreamRate = cmp.Or(c.UpstreamRate, DefaultUpstreamRate)
	c.UpstreamBurst = cmp.Or(c.UpstreamBurst, ratelimit.DefaultBurst(c.UpstreamRate))
	c.BatchRate = cmp.Or(c.BatchRate, DefaultBatchRate)
	c.BatchBurst = cmp.Or(c.BatchBurst, DefaultBatchBurst)
	c.AdHocRate = cmp.Or(c.AdHocRate, DefaultAdHocRate)
	c.AdHocBurst = cmp.Or(c.AdHocBurst, DefaultAdHocBurst)
	c.ClientIPv6Prefix = cmp.Or(c.ClientIPv6Prefix, clientaddr.DefaultIPv6Prefix)
	if c.ClientIP == nil {
		c.ClientIP = clientaddr.RemoteAddr
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
