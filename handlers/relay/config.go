package relay

import (
	"fmt"
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
	"github.com/gamegate/gamegate/internal/duration"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Defaults of Config beyond the table's (DefaultIdleTimeout,
// DefaultAloneTimeout, DefaultMaxBindings), and the bounds Validate checks.
const (
	DefaultMaxContent     = wirerelay.DefaultMaxRelayContent
	DefaultNonceByteOrder = NonceLittleEndian
	// DefaultName is the name of relay handlers that give none: handlers
	// of one name share their bindings.
	DefaultName = "relay"

	MaxTimeout     = 24 * time.Hour
	MaxMaxContent  = 0xFFFF
	MaxMaxBindings = 1 << 30
)

// Byte orders of the BIND nonce (Config.NonceByteOrder).
const (
	// NonceLittleEndian is what the shipped client sends.
	NonceLittleEndian = "little"
	// NonceBigEndian is what the protocol page says.
	NonceBigEndian = "big"
)

// Config is the behaviour of a relay Server and its Engine: the relay
// handler's options (but its secrets, which make the Sealer), by their
// JSON and Caddyfile names. Zero values mean the defaults.
type Config struct {
	// A binding with no traffic for this long ends; its client's next
	// message gets ERROR 1. Default: 10s.
	IdleTimeout duration.Duration `json:"idle_timeout,omitempty"`
	// The idle timeout of a binding with no connected peer yet (a host
	// waiting for players). Default: 60s.
	AloneTimeout duration.Duration `json:"alone_timeout,omitempty"`
	// Largest RELAY content forwarded, in bytes, 1 to 65535. Default:
	// 1400.
	MaxContent int `json:"max_content,omitempty"`
	// Most bindings held; a BIND of a new allocation past it is dropped.
	// Default: 100000.
	MaxBindings int `json:"max_bindings,omitempty"`
	// Byte order of the BIND nonce: "little" (what the shipped client
	// sends) or "big" (what the protocol page says). Default: little.
	NonceByteOrder string `json:"nonce_byte_order,omitempty"`

	// Sealer opens the connection data in BIND and CONNECT_REQUEST.
	// Required.
	Sealer *Sealer `json:"-"`
	// Count receives each datagram's verdict (metrics). Default: none.
	Count func(Verdict) `json:"-"`
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.MaxContent == 0 {
		c.MaxContent = DefaultMaxContent
	}
	if c.NonceByteOrder == "" {
		c.NonceByteOrder = DefaultNonceByteOrder
	}
	t := TableConfig{Limit: c.MaxBindings, IdleTimeout: c.IdleTimeout.Std(), AloneTimeout: c.AloneTimeout.Std()}.WithDefaults()
	c.MaxBindings, c.IdleTimeout, c.AloneTimeout = t.Limit, duration.Duration(t.IdleTimeout), duration.Duration(t.AloneTimeout)
	if c.Count == nil {
		c.Count = func(Verdict) {}
	}
	return c
}

// Validate checks every option's range; zero values (the defaults) pass.
// The Sealer is not an option: NewSealer checks the secrets.
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"idle_timeout", c.IdleTimeout.Std()}, {"alone_timeout", c.AloneTimeout.Std()}} {
		if err := bounds.Duration(d.name, d.v, 0, MaxTimeout); err != nil {
			return err
		}
	}
	if err := bounds.First(
		bounds.Int("max_content", c.MaxContent, 1, MaxMaxContent),
		bounds.Int("max_bindings", c.MaxBindings, 1, MaxMaxBindings),
	); err != nil {
		return err
	}
	switch c.NonceByteOrder {
	case "", NonceLittleEndian, NonceBigEndian:
	default:
		return fmt.Errorf("nonce_byte_order must be one of %s, %s, not %q", NonceLittleEndian, NonceBigEndian, c.NonceByteOrder)
	}
	return nil
}

// TableConfig is the configuration of the binding table c's Server needs:
// a table of other settings would run c's bindings with another table's
// timeouts. The sweeper runs at least once a second. Values Validate
// refuses (negative ones) take their defaults here, so that a table can be
// made before the configuration is validated (Caddy provisions first).
func (c Config) TableConfig() TableConfig {
	c.IdleTimeout, c.AloneTimeout, c.MaxBindings = max(c.IdleTimeout, 0), max(c.AloneTimeout, 0), max(c.MaxBindings, 0)
	c = c.WithDefaults()
	return TableConfig{
		Limit:        c.MaxBindings,
		IdleTimeout:  c.IdleTimeout.Std(),
		AloneTimeout: c.AloneTimeout.Std(),
		Sweep:        min(time.Second, c.IdleTimeout.Std()/4),
	}
}
