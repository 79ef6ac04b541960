// Package master is a master server of the Quake 3 / DarkPlaces family,
// compatible with dpmaster: game servers register with heartbeats, proven
// by a getinfo challenge sent to their own address, and clients ask for
// the list with getservers or getserversExt. It is a dgram.Protocol, free
// of Caddy: wire/master recognises and decodes the datagrams; this
// package keeps the registry and every limit.
package master

import (
	"cmp"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Defaults of Config, and the bounds Validate checks.
const (
	DefaultMaxServers           = 4096
	DefaultMaxServersPerAddress = 32
	DefaultExpiry               = 15 * time.Minute
	DefaultChallengeTimeout     = 2 * time.Second
	DefaultMaxChallenges        = 1024
	DefaultMaxChallengesPerAddr = 32
	DefaultHeartbeatRate        = 1.0
	DefaultHeartbeatBurst       = 32
	DefaultListRate             = 1.0
	DefaultListBurst            = 4
	DefaultMaxSources           = 65536
	DefaultMaxReplyDatagrams    = 8
	DefaultReplyRate            = 1000.0

	MaxMaxServers        = 1 << 20
	MaxMaxChallenges     = 1 << 20
	MaxMaxSources        = 1 << 22
	MaxMaxReplyDatagrams = 1024
	MinExpiry            = time.Second
	MaxExpiry            = 24 * time.Hour
	MinChallengeTimeout  = 100 * time.Millisecond
	MaxChallengeTimeout  = time.Minute
	MaxNameLen           = 64
)

// Config is the behaviour of a Master. Zero values mean the defaults.
// The names in Validate's errors are the options' (JSON and Caddyfile).
type Config struct {
	// Name is the list's name: masters of one name share their list (in a
	// process, across reloads, and through a shared store, where it is
	// part of a key). At most MaxNameLen bytes, no control characters.
	// Default: "" (the caller's default name).
	Name string
	// MaxServers bounds the servers listed, from all addresses.
	MaxServers int
	// MaxServersPerAddress bounds the servers listed from one IP address
	// (its ports).
	MaxServersPerAddress int
	// Expiry is how long a server stays listed after its last valid
	// infoResponse.
	Expiry time.Duration
	// ChallengeTimeout is how long a getinfo challenge waits for its
	// infoResponse; later heartbeats do not extend it.
	ChallengeTimeout time.Duration
	// MaxChallenges bounds the challenges waiting for an answer.
	MaxChallenges int
	// MaxChallengesPerAddress bounds the challenges waiting for an answer
	// at one source (an IPv4 address, an IPv6 prefix of ClientIPv6Prefix
	// bits); a heartbeat past it is dropped, so that heartbeats forged
	// from one source never make another source's challenges forgotten.
	MaxChallengesPerAddress int
	// HeartbeatRate and HeartbeatBurst limit the heartbeats of one source
	// (an IPv4 address, an IPv6 prefix of ClientIPv6Prefix bits).
	HeartbeatRate  float64
	HeartbeatBurst int
	// ListRate and ListBurst limit the list requests of one source.
	ListRate  float64
	ListBurst int
	// MaxSources bounds the sources each of the two limits keeps.
	MaxSources int
	// MaxReplyDatagrams bounds the datagrams of one list answer, each at
	// most wire/master's MaxResponseDatagram bytes; a longer list is cut
	// (its last datagram still ends it).
	MaxReplyDatagrams int
	// ReplyRate and ReplyBurst bound the list datagrams sent per second to
	// all sources together.
	ReplyRate  float64
	ReplyBurst int
	// ClientIPv6Prefix is the prefix length of one IPv6 source.
	ClientIPv6Prefix int

	// Registry keeps the servers and challenges; one may outlive a
	// Master (a configuration reload). Default: a new one.
	Registry *Registry
	// Now gives the time. Default: time.Now.
	Now func() time.Time
	// Count receives each datagram's verdict (metrics). Default: none.
	Count func(Verdict)
	// Sent receives the size of each datagram sent (metrics). Default:
	// none.
	Sent func(bytes int)
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxServers, DefaultMaxServers)
	def(&c.MaxServersPerAddress, DefaultMaxServersPerAddress)
	def(&c.MaxChallenges, DefaultMaxChallenges)
	def(&c.MaxChallengesPerAddress, DefaultMaxChallengesPerAddr)
	def(&c.MaxSources, DefaultMaxSources)
	def(&c.MaxReplyDatagrams, DefaultMaxReplyDatagrams)
	def(&c.ClientIPv6Prefix, clientaddr.DefaultIPv6Prefix)
	c.Expiry = cmp.Or(c.Expiry, DefaultExpiry)
	c.ChallengeTimeout = cmp.Or(c.ChallengeTimeout, DefaultChallengeTimeout)
	if c.HeartbeatRate == 0 {
		c.HeartbeatRate = DefaultHeartbeatRate
		def(&c.HeartbeatBurst, DefaultHeartbeatBurst)
	}
	if c.ListRate == 0 {
		c.ListRate = DefaultListRate
		def(&c.ListBurst, DefaultListBurst)
	}
	c.ReplyRate = cmp.Or(c.ReplyRate, DefaultReplyRate)
	def(&c.HeartbeatBurst, ratelimit.DefaultBurst(c.HeartbeatRate))
	def(&c.ListBurst, ratelimit.DefaultBurst(c.ListRate))
	def(&c.ReplyBurst, ratelimit.DefaultBurst(c.ReplyRate))
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks every option's range; zero values (the defaults) pass.
func (c Config) Validate() error {
	var v bounds.Check
	v.Add(validateName(c.Name))
	v.Int("max_servers", c.MaxServers, 1, MaxMaxServers)
	v.Int("max_servers_per_address", c.MaxServersPerAddress, 1, MaxMaxServers)
	v.Duration("expiry", c.Expiry, MinExpiry, MaxExpiry)
	v.Duration("challenge_timeout", c.ChallengeTimeout, MinChallengeTimeout, MaxChallengeTimeout)
	v.Int("max_challenges", c.MaxChallenges, 1, MaxMaxChallenges)
	v.Int("max_challenges_per_address", c.MaxChallengesPerAddress, 1, MaxMaxChallenges)
	v.Add(ratelimit.ValidateOptions("heartbeat_rate", "heartbeat_burst", c.HeartbeatRate, c.HeartbeatBurst, ratelimit.MaxBurst))
	v.Add(ratelimit.ValidateOptions("list_rate", "list_burst", c.ListRate, c.ListBurst, ratelimit.MaxBurst))
	v.Int("max_sources", c.MaxSources, 1, MaxMaxSources)
	v.Int("max_reply_datagrams", c.MaxReplyDatagrams, 1, MaxMaxReplyDatagrams)
	v.Add(ratelimit.ValidateOptions("reply_rate", "reply_burst", c.ReplyRate, c.ReplyBurst, ratelimit.MaxBurst))
	v.Add(clientaddr.ValidateIPv6Prefix("client_ipv6_prefix", c.ClientIPv6Prefix))
	return v.Err()
}

// validateName checks a master's name: a few printable characters.
func validateName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("name of %d bytes: must be at most %d", len(name), MaxNameLen)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return fmt.Errorf("name %q: must be valid UTF-8 without control characters", name)
		}
	}
	return nil
}
