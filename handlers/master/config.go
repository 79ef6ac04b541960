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
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// DefaultName is the name of a master server given none (Config.Name),
// and the master a server list or browser lists unless given another.
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

// Config is the behaviour of a Master, and the options of the master
// module, which embeds it: the JSON keys and the names in Validate's
// errors are the options' (JSON and Caddyfile). Zero values mean the
// defaults.
type Config struct {
	// Servers listed at most, from all addresses. Default: 4096.
	MaxServers int `json:"max_servers,omitempty"`
	// Servers listed at most from one IP address (on different ports).
	// Default: 32.
	MaxServersPerAddress int `json:"max_servers_per_address,omitempty"`
	// How long a server stays listed after its last valid infoResponse;
	// game servers heartbeat every 5 to 15 minutes. Default: 15m.
	Expiry duration.Duration `json:"expiry,omitempty"`
	// How long a getinfo challenge waits for the server's infoResponse;
	// heartbeats in the meantime do not extend it. Default: 2s.
	ChallengeTimeout duration.Duration `json:"challenge_timeout,omitempty"`
	// Challenges waiting for an answer at most, from all addresses; a
	// heartbeat past this makes one of them (at random) forgotten. The
	// answer to a forgotten challenge of 12 characters (every real
	// server's) still lists the server: it is checked by its keyed hash
	// (Registry.made). Default: 1024.
	MaxChallenges int `json:"max_challenges,omitempty"`
	// Challenges waiting for an answer at most from one source (an IPv4
	// address or an IPv6 prefix of client_ipv6_prefix bits); its further
	// heartbeats are dropped meanwhile, so that heartbeats forged from one
	// source never make another's challenges forgotten. Default: 32.
	MaxChallengesPerAddress int `json:"max_challenges_per_address,omitempty"`
	// Heartbeats per second from one source (an IPv4 address or an IPv6
	// prefix of client_ipv6_prefix bits). Default: 1.
	HeartbeatRate float64 `json:"heartbeat_rate,omitempty"`
	// Heartbeats at once from one source. Default: 32 (one for each
	// server max_servers_per_address allows).
	HeartbeatBurst int `json:"heartbeat_burst,omitempty"`
	// List requests (getservers, getserversExt) per second from one
	// source. Default: 1.
	ListRate float64 `json:"list_rate,omitempty"`
	// List requests at once from one source. Default: 4.
	ListBurst int `json:"list_burst,omitempty"`
	// Sources each of the two per-source limits keeps at most; also the
	// networks the per-network share keeps, and the known sources.
	// Default: 65536.
	MaxSources int `json:"max_sources,omitempty"`
	// Datagrams of one list answer at most, each at most 1400 bytes
	// (wire/master's MaxResponseDatagram); a longer list is cut, its last
	// datagram still ending it. Default: 8.
	MaxReplyDatagrams int `json:"max_reply_datagrams,omitempty"`
	// List datagrams per second to all sources together. Default: 1000.
	ReplyRate float64 `json:"reply_rate,omitempty"`
	// List datagrams at once to all sources together. Default: one
	// second of reply_rate.
	ReplyBurst int `json:"reply_burst,omitempty"`
	// List datagrams per second to one network (an IPv4 /24, an IPv6
	// /48): list requests forged from a few networks take this share of
	// reply_rate, not all of it. Default: reply_rate / 8.
	NetworkReplyRate float64 `json:"network_reply_rate,omitempty"`
	// List datagrams at once to one network. Default: reply_burst / 8
	// (at least 1) with the default network_reply_rate, else one second
	// of it.
	NetworkReplyBurst int `json:"network_reply_burst,omitempty"`
	// Of reply_rate, the list datagrams per second only known sources may
	// have: the addresses of listed servers, and sources answered in full
	// while the budget was calm (less than half of the rest used) in the
	// last hour (KnownSourceLifetime), at least KnownSourceSettle before
	// the budget last ran out. Other sources share the rest; a known
	// source takes from the rest first. So list requests forged from many
	// networks cannot keep known clients from their lists. Less than
	// reply_rate. Default: reply_rate / 4.
	KnownReplyRate float64 `json:"known_reply_rate,omitempty"`
	// Of reply_burst, the list datagrams at once kept for known sources;
	// less than reply_burst. Default: reply_burst / 4 (at least 1) with
	// the default known_reply_rate, else one second of it (less than
	// reply_burst).
	KnownReplyBurst int `json:"known_reply_burst,omitempty"`
	// Prefix length, in bits, of the IPv6 addresses one source holds.
	// Default: 64.
	ClientIPv6Prefix int `json:"client_ipv6_prefix,omitempty"`
	// With storage redis: the networks (CIDR) outside the public internet
	// in which an address names the same host from every node. A server
	// another node proved is listed here, and its status queried from
	// here, only at a public address or in one of these; a loopback or
	// private address another node proved names a host of that node's
	// network. At most 64. Default: none.
	SharedNetworks []string `json:"shared_networks,omitempty"`
	// Masters with the same name share their list (in a process, across
	// reloads, and through a shared store, where it is part of a key),
	// and a reloaded configuration takes the list over from the one it
	// replaces; at most 64 bytes, no control characters. Default: master.
	Name string `json:"name,omitempty"`

	// Registry keeps the servers and challenges; one may outlive a
	// Master (a configuration reload). Default: a new one.
	Registry *Registry `json:"-"`
	// Now gives the time. Default: time.Now.
	Now func() time.Time `json:"-"`
	// Count receives each datagram's verdict (metrics). Default: none.
	Count func(Verdict) `json:"-"`
	// Sent receives the size of each datagram sent (metrics). Default:
	// none.
	Sent func(bytes int) `json:"-"`
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
	c.Name = cmp.Or(c.Name, DefaultName)
	c.Expiry = cmp.Or(c.Expiry, duration.Duration(DefaultExpiry))
	c.ChallengeTimeout = cmp.Or(c.ChallengeTimeout, duration.Duration(DefaultChallengeTimeout))
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
	v.Add(ValidateName(c.Name))
	v.Int("max_servers", c.MaxServers, 1, MaxMaxServers)
	v.Int("max_servers_per_address", c.MaxServersPerAddress, 1, MaxMaxServers)
	v.Duration("expiry", c.Expiry.Std(), MinExpiry, MaxExpiry)
	v.Duration("challenge_timeout", c.ChallengeTimeout.Std(), MinChallengeTimeout, MaxChallengeTimeout)
	if exp, ct := cmp.Or(c.Expiry.Std(), DefaultExpiry), cmp.Or(c.ChallengeTimeout.Std(), DefaultChallengeTimeout); ct > exp {
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

// ValidateName checks a master's name (the name server lists and
// browsers find its list by): a few printable characters.
func ValidateName(name string) error {
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
