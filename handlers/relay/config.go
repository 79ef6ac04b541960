package relay

import (
	"fmt"
	"github.com/gamegate/gamegate/internal/bounds"
	"time"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Defaults of Config beyond the table's (DefaultIdleTimeout,
// DefaultAloneTimeout, DefaultMaxBindings), and the bounds Validate checks.
const (
	DefaultMaxContent     = wirerelay.DefaultMaxRelayContent
	DefaultNonceByteOrder = NonceLittleEndian

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

// Config is the behaviour of a relay Server and its Engine. Zero values
// mean the defaults. The names in Validate's errors are the options' (JSON
// and Caddyfile).
type Config struct {
	// Sealer opens the connection data in BIND and CONNECT_REQUEST.
	// Required.
	Sealer *Sealer
	// MaxContent is the largest RELAY content forwarded, in bytes.
	// Default: DefaultMaxContent.
	MaxContent int
	// NonceByteOrder is the byte order of BIND nonces: NonceLittleEndian
	// or NonceBigEndian. Default: DefaultNonceByteOrder.
	NonceByteOrder string
	// IdleTimeout, AloneTimeout and MaxBindings are the binding table's
	// (MaxBindings is TableConfig's Limit), with TableConfig's defaults.
	IdleTimeout  time.Duration
	AloneTimeout time.Duration
	MaxBindings  int
	// Count receives each datagram's verdict (metrics). Default: none.
	Count func(Verdict)
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.MaxContent == 0 {
		c.MaxContent = DefaultMaxContent
	}
	if c.NonceByteOrder == "" {
		c.NonceByteOrder = DefaultNonceByteOrder
	}
	t := TableConfig{Limit: c.MaxBindings, IdleTimeout: c.IdleTimeout, AloneTimeout: c.AloneTimeout}.WithDefaults()
	c.MaxBindings, c.IdleTimeout, c.AloneTimeout = t.Limit, t.IdleTimeout, t.AloneTimeout
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
	}{{"idle_timeout", c.IdleTimeout}, {"alone_timeout", c.AloneTimeout}} {
		if err := bounds.Duration(d.name, d.v, 0, MaxTimeout); err != nil {
			return err
		}
	}
	if c.MaxContent < 0 || c.MaxContent > MaxMaxContent {
		return fmt.Errorf("max_content must be in [1, %d] bytes, not %d", MaxMaxContent, c.MaxContent)
	}
	if c.MaxBindings < 0 || c.MaxBindings > MaxMaxBindings {
		return fmt.Errorf("max_bindings must be in [1, %d], not %d", MaxMaxBindings, c.MaxBindings)
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
		IdleTimeout:  c.IdleTimeout,
		AloneTimeout: c.AloneTimeout,
		Sweep:        min(time.Second, c.IdleTimeout/4),
	}
}
