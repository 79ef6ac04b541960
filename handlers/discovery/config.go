package discovery

import (
	"cmp"
	"fmt"
	"time"
)

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
	MaxLifetime       = 24 * time.Hour
	MaxHealthWait     = time.Hour
	MaxHealthFailures = 1000
	MaxHealthRequests = 256
)

// WithDefaults returns c with every zero field set to its default (and a
// copy of Health with its own defaults).
func (c Config) WithDefaults() Config {
	c.FilePoll = cmp.Or(c.FilePoll, DefaultFilePoll)
	c.MaxAge = cmp.Or(c.MaxAge, DefaultMaxAge)
	if c.Health != nil {
		h := c.Health.WithDefaults()
		c.Health = &h
	}
	return c
}

// WithDefaults returns h with every zero field set to its default.
func (h HealthConfig) WithDefaults() HealthConfig {
	h.Interval = cmp.Or(h.Interval, DefaultHealthInterval)
	h.Failures = cmp.Or(h.Failures, DefaultHealthFailures)
	h.Requests = cmp.Or(h.Requests, DefaultHealthRequests)
	h.Wait = cmp.Or(h.Wait, DefaultHealthWait)
	return h
}

// Validate checks c; zero values (the defaults) are valid. Errors start
// with the option's name (JSON and Caddyfile).
func (c Config) Validate() error {
	for id, list := range c.Inline {
		if err := ValidateFleetID(id); err != nil {
			return fmt.Errorf("fleets: %w", err)
		}
		for i, s := range list {
			if err := s.Validate(); err != nil {
				return fmt.Errorf("fleet %q server %d: %w", id, i, err)
			}
		}
	}
	if err := durationIn("max_age", c.MaxAge, MaxLifetime); err != nil {
		return err
	}
	if err := durationIn("file_poll", c.FilePoll, MaxLifetime); err != nil {
		return err
	}
	if c.Health != nil {
		if err := c.Health.Validate(); err != nil {
			return fmt.Errorf("health_check %w", err)
		}
	}
	return nil
}

// Validate checks h; zero values (the defaults) are valid.
func (h HealthConfig) Validate() error {
	for _, err := range []error{
		durationIn("interval", h.Interval, MaxLifetime),
		countIn("failures", h.Failures, MaxHealthFailures),
		countIn("requests", h.Requests, MaxHealthRequests),
		durationIn("wait", h.Wait, MaxHealthWait),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func durationIn(field string, d, hi time.Duration) error {
	if d < 0 || d > hi {
		return fmt.Errorf("%s must be a duration in [0s, %s], not %s", field, hi, d)
	}
	return nil
}

func countIn(field string, n, hi int) error {
	if n < 0 || n > hi {
		return fmt.Errorf("%s must be in [1, %d], not %d", field, hi, n)
	}
	return nil
}
