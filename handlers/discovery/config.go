package discovery

import (
	"cmp"
	"fmt"
	"net/netip"
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/netaddr"
)

// DefaultName is the name of a qos_discovery handler given none: the
// name its admin-set fleets are kept and reached under.
const DefaultName = "default"

// MaxNameLength bounds a qos_discovery handler's name, in bytes.
const MaxNameLength = 64

// Defaults of Config and HealthConfig, and the bounds Validate checks.
const (
	DefaultFilePoll = 2 * time.Second
	// DefaultMaxAge is the protocol's 20-minute discovery interval.
	DefaultMaxAge         = 1200 * time.Second
	DefaultHealthInterval = 10 * time.Second
	DefaultHealthFailures = 3
	DefaultHealthRequests = 3
	DefaultHealthWait     = time.Second

	// MaxLifetime bounds MaxAge, FilePoll and the health-check Interval.
	MaxLifetime = 24 * time.Hour
	// MinFilePoll and MinHealthInterval are the shortest file poll and
	// health-check interval: reading a file or probing every server more
	// often than ten times a second costs I/O and the QoS servers' rate
	// limits and makes no answer fresher, so a shorter one is a mistake.
	MinFilePoll       = 100 * time.Millisecond
	MinHealthInterval = 100 * time.Millisecond
	// MinMaxAge is the shortest MaxAge: Cache-Control's max-age counts
	// whole seconds, so a shorter one cannot be stated (it would be sent
	// as max-age=0).
	MinMaxAge = time.Second
	// MinHealthWait is the shortest health-check Wait. Wait counts from
	// the last request sent, and an answer needs a round trip: below a
	// millisecond not even a QoS server on the same host answers in time
	// (at 1ns none can), and every server would be withheld. A few
	// milliseconds suit servers in the same data centre only; a wait
	// shorter than the path's round trip fails servers for their latency,
	// not their health.
	MinHealthWait     = time.Millisecond
	MaxHealthWait     = time.Hour
	MaxHealthFailures = 1000
	MaxHealthRequests = 256
)

// WithDefaults returns c with every zero field set to its default (and a
// copy of Health with its own defaults).
func (c Config) WithDefaults() Config {
	c.FilePoll = cmp.Or(c.FilePoll, duration.Duration(DefaultFilePoll))
	c.MaxAge = cmp.Or(c.MaxAge, duration.Duration(DefaultMaxAge))
	c.Name = cmp.Or(c.Name, DefaultName)
	if c.Health != nil {
		h := c.Health.WithDefaults()
		c.Health = &h
	}
	return c
}

// WithDefaults returns h with every zero field set to its default.
func (h HealthConfig) WithDefaults() HealthConfig {
	h.Interval = cmp.Or(h.Interval, duration.Duration(DefaultHealthInterval))
	h.Failures = cmp.Or(h.Failures, DefaultHealthFailures)
	h.Requests = cmp.Or(h.Requests, DefaultHealthRequests)
	h.Wait = cmp.Or(h.Wait, duration.Duration(DefaultHealthWait))
	return h
}

// Validate checks c; zero values (the defaults) are valid. Errors start
// with the option's name (JSON and Caddyfile).
func (c Config) Validate() error {
	if err := ValidateName(c.Name); err != nil {
		return err
	}
	if _, err := c.AllowNetworks(); err != nil {
		return err
	}
	return c.validateService()
}

// ValidateName checks a handler's name: a path segment of the admin API
// (/qos-discovery/{name}/fleets) of at most MaxNameLength bytes, without
// control characters; "" is DefaultName.
func ValidateName(name string) error {
	if len(name) > MaxNameLength {
		return fmt.Errorf("name of %d bytes: must be at most %d", len(name), MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '/' || c < 0x20 || c == 0x7F {
			return fmt.Errorf("name %q: must be one path segment of the admin API, without '/' or control characters", name)
		}
	}
	return nil
}

// validateService checks the options of the Service (all but the
// Handler's access rules), which NewService refuses to run without.
func (c Config) validateService() error {
	if _, err := ParseFieldNames(c.FieldNames); err != nil {
		return fmt.Errorf("field_names: %w", err)
	}
	for id, list := range c.Fleets {
		if err := ValidateFleetID(id); err != nil {
			return fmt.Errorf("fleets: %w", err)
		}
		for i, s := range list {
			if err := Server(s).Validate(); err != nil {
				return fmt.Errorf("fleet %q server %d: %w", id, i, err)
			}
		}
	}
	if err := bounds.First(
		bounds.Duration("max_age", c.MaxAge.Std(), MinMaxAge, MaxLifetime),
		bounds.Duration("file_poll", c.FilePoll.Std(), MinFilePoll, MaxLifetime),
	); err != nil {
		return err
	}
	if c.Health != nil {
		if err := c.Health.Validate(); err != nil {
			return fmt.Errorf("health_check %w", err)
		}
	}
	return nil
}

// inline returns the servers of Fleets, each fleet's without repeated
// entries (the discovery contract promises none).
func (c Config) inline() map[string][]Server {
	if c.Fleets == nil {
		return nil
	}
	out := make(map[string][]Server, len(c.Fleets))
	for id, list := range c.Fleets {
		servers := make([]Server, 0, len(list))
		for _, s := range list {
			servers = append(servers, Server(s))
		}
		out[id] = Dedupe(servers)
	}
	return out
}

// AllowNetworks returns the networks of Allow.
func (c Config) AllowNetworks() ([]netip.Prefix, error) {
	return netaddr.ParsePrefixes("allow", c.Allow)
}

// Validate checks h; zero values (the defaults) are valid.
func (h HealthConfig) Validate() error {
	return bounds.First(
		bounds.Duration("interval", h.Interval.Std(), MinHealthInterval, MaxLifetime),
		bounds.Int("failures", h.Failures, 1, MaxHealthFailures),
		bounds.Int("requests", h.Requests, 1, MaxHealthRequests),
		bounds.Duration("wait", h.Wait.Std(), MinHealthWait, MaxHealthWait),
	)
}
