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

// DefaultName is the name of a game_query handler given none, and the
// handler whose servers a server list or browser lists unless given
// another.
const DefaultName = "game_query"

// MaxName bounds a game_query handler's name, in bytes.
const MaxName = 64

// ValidateName checks a game_query handler's name (the name server lists
// and browsers find its servers by): at most MaxName bytes, without
// spaces; "" is DefaultName.
func ValidateName(name string) error {
	if strings.ContainsFunc(name, unicode.IsSpace) || len(name) > MaxName {
		return fmt.Errorf("name %q: at most %d bytes, without spaces", name, MaxName)
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
