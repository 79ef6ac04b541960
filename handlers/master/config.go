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
	"net/netip"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// DefaultName is the name of a master server given none, and the master
// a server list or browser lists unless given another.
const DefaultName = "master"

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
	// Unless set, a network's share of the reply budget is 1/8 of it, and
	// 1/4 of it is kept for known sources.
	DefaultNetworkReplyShare = 8
	DefaultKnownReplyShare   = 4
	// KnownSourceLifetime is how long a source answered while the reply
	// budget was calm stays known; KnownSourceSettle is how long the
	// budget must have stayed calm after its first such answer: the
	// sources a flood's first requests come from are not known for it.
	KnownSourceLifetime = time.Hour
	KnownSourceSettle   = 5 * time.Second

	MaxMaxServers        = 1 << 20
	MaxMaxChallenges     = 1 << 20
	MaxMaxSources        = 1 << 22
	MaxMaxReplyDatagrams = 1024
	MinExpiry            = time.Second
	MaxExpiry            = 24 * time.Hour
	MinChallengeTimeout  = 100 * time.Millisecond
	MaxChallengeTimeout  = time.Minute
	MaxNameLen           = 64
	MaxSharedNetworks    = 64
	// MinReplyRate leaves room for the shares derived from reply_rate.
	MinReplyRate = 1e-6
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
	// MaxChallenges bounds the challenges waiting for an answer. The
	// answer to a full-length challenge forgotten to make room still
	// lists the server (Registry.made).
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
	// MaxSources bounds the sources each of the two limits keeps, the
	// networks of the per-network share, and the known sources.
	MaxSources int
	// MaxReplyDatagrams bounds the datagrams of one list answer, each at
	// most wire/master's MaxResponseDatagram bytes; a longer list is cut
	// (its last datagram still ends it).
	MaxReplyDatagrams int
	// ReplyRate and ReplyBurst bound the list datagrams sent per second to
	// all sources together.
	ReplyRate  float64
	ReplyBurst int
	// NetworkReplyRate and NetworkReplyBurst bound the list datagrams sent
	// per second to one network (an IPv4 /24, an IPv6 /48), so that list
	// requests forged from a few networks take a share of ReplyRate, not
	// all of it. Default: ReplyRate/8 and ReplyBurst/8 (at least 1).
	NetworkReplyRate  float64
	NetworkReplyBurst int
	// KnownReplyRate and KnownReplyBurst are the part of ReplyRate and
	// ReplyBurst kept for known sources: the addresses of listed servers,
	// and sources answered in full while the budget was calm (less than
	// half of the rest used) at least KnownSourceSettle before the budget
	// last ran out, and within KnownSourceLifetime. Other sources
	// share the rest; a known source takes from the rest first. So list
	// requests forged from many networks cannot keep a known client from
	// its list. Default: ReplyRate/4 and ReplyBurst/4 (at least 1).
	KnownReplyRate  float64
	KnownReplyBurst int
	// ClientIPv6Prefix is the prefix length of one IPv6 source.
	ClientIPv6Prefix int
	// SharedNetworks are the networks (CIDR, "10.0.0.0/8") outside the
	// public internet in which an address means the same host to every
	// node sharing the list. A server another node proved is listed here
	// (and its status queried from here) only at a public address or in
	// one of them: a loopback or private address another node proved
	// names a host of that node's network, perhaps none or another here.
	// At most MaxSharedNetworks. Default: none.
	SharedNetworks []string

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
	if c.NetworkReplyRate == 0 {
		c.NetworkReplyRate = c.ReplyRate / DefaultNetworkReplyShare
		def(&c.NetworkReplyBurst, max(c.ReplyBurst/DefaultNetworkReplyShare, 1))
	}
	if c.KnownReplyRate == 0 {
		c.KnownReplyRate = c.ReplyRate / DefaultKnownReplyShare
		def(&c.KnownReplyBurst, max(c.ReplyBurst/DefaultKnownReplyShare, 1))
	}
	def(&c.NetworkReplyBurst, ratelimit.DefaultBurst(c.NetworkReplyRate))
	def(&c.KnownReplyBurst, max(min(ratelimit.DefaultBurst(c.KnownReplyRate), c.ReplyBurst-1), 1))
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
	if exp, ct := cmp.Or(c.Expiry, DefaultExpiry), cmp.Or(c.ChallengeTimeout, DefaultChallengeTimeout); ct > exp {
		// A server's proof of a challenge is kept with its listing: a
		// challenge outliving the listing could list it again from an
		// old answer.
		v.Failf("challenge_timeout %s must not be longer than expiry %s", ct, exp)
	}
	v.Int("max_challenges", c.MaxChallenges, 1, MaxMaxChallenges)
	v.Int("max_challenges_per_address", c.MaxChallengesPerAddress, 1, MaxMaxChallenges)
	v.Add(ratelimit.ValidateOptions("heartbeat_rate", "heartbeat_burst", c.HeartbeatRate, c.HeartbeatBurst, ratelimit.MaxBurst))
	v.Add(ratelimit.ValidateOptions("list_rate", "list_burst", c.ListRate, c.ListBurst, ratelimit.MaxBurst))
	v.Int("max_sources", c.MaxSources, 1, MaxMaxSources)
	v.Int("max_reply_datagrams", c.MaxReplyDatagrams, 1, MaxMaxReplyDatagrams)
	v.Add(ratelimit.ValidateOptions("reply_rate", "reply_burst", c.ReplyRate, c.ReplyBurst, ratelimit.MaxBurst))
	if c.ReplyRate != 0 && c.ReplyRate < MinReplyRate {
		v.Failf("reply_rate %g per second: must be at least %g", c.ReplyRate, MinReplyRate)
	}
	v.Add(clientaddr.ValidateIPv6Prefix("client_ipv6_prefix", c.ClientIPv6Prefix))
	_, err := c.sharedNetworks()
	v.Add(err)
	if v.Err() != nil {
		return v.Err()
	}
	// The shares, with their defaults derived from reply_rate and
	// reply_burst; the rest of the budget must stay positive.
	d := c.WithDefaults()
	v.Add(ratelimit.ValidateOptions("network_reply_rate", "network_reply_burst", d.NetworkReplyRate, d.NetworkReplyBurst, ratelimit.MaxBurst))
	v.Add(ratelimit.ValidateOptions("known_reply_rate", "known_reply_burst", d.KnownReplyRate, d.KnownReplyBurst, ratelimit.MaxBurst))
	if v.Err() == nil && (d.KnownReplyRate >= d.ReplyRate ||
		ratelimit.Validate(d.ReplyRate-d.KnownReplyRate, max(d.ReplyBurst-d.KnownReplyBurst, 1)) != nil) {
		v.Failf("known_reply_rate %g: must be less than reply_rate (%g), by at least one datagram per 90 years", d.KnownReplyRate, d.ReplyRate)
	}
	if c.KnownReplyBurst != 0 && c.KnownReplyBurst >= d.ReplyBurst {
		v.Failf("known_reply_burst %d: must be less than reply_burst (%d)", c.KnownReplyBurst, d.ReplyBurst)
	}
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

// sharedNetworks parses SharedNetworks.
func (c Config) sharedNetworks() ([]netip.Prefix, error) {
	if len(c.SharedNetworks) > MaxSharedNetworks {
		return nil, fmt.Errorf("shared_networks: %d networks, at most %d", len(c.SharedNetworks), MaxSharedNetworks)
	}
	var out []netip.Prefix
	for _, s := range c.SharedNetworks {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("shared_networks: %q is not a network (CIDR, such as 10.0.0.0/8)", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
