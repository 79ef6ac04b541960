package a2s

import (
	"fmt"

	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/bounds"
	wirea2s "github.com/gamegate/gamegate/wire/a2s"
)

// Config is the a2s game query protocol's configuration
// (gamegate.query.a2s): Valve's server query protocol for Source and
// GoldSrc games.
type Config struct {
	// attempt_timeout and retries.
	query.Attempts
	// Layout of split answers: auto (told from the first fragment),
	// source, source_no_size or goldsrc. Default: auto.
	SplitLayout string `json:"split_layout,omitempty"`
	// Most fragments one answer may have, 2 to 255. Default: 64.
	MaxPackets int `json:"max_packets,omitempty"`
	// Largest answer accepted, in bytes, compressed and decompressed,
	// 1400 to 1048576. Default: 131072.
	MaxResponseSize int `json:"max_response_size,omitempty" caddyfile:"integer"`

	// Deprecated: the former name of max_response_size, still read (with
	// a warning).
	MaxResponse int `json:"max_response,omitempty"`
}

// Validate checks the options' ranges.
func (c *Config) Validate() error {
	var layoutErr error
	if _, ok := ParseLayout(c.SplitLayout); !ok {
		layoutErr = fmt.Errorf("split_layout: want %s, got %q", LayoutChoices(), c.SplitLayout)
	}
	return bounds.First(
		layoutErr,
		c.Attempts.Validate(),
		bounds.Int("max_packets", c.MaxPackets, MinMaxPackets, wirea2s.MaxSourcePackets),
		bounds.Int("max_response_size", c.MaxResponseSize, MinMaxResponse, MaxMaxResponse),
	)
}

// RenamedOptions returns the former names of attempt_timeout and
// max_response_size.
func (c *Config) RenamedOptions() []query.Renamed {
	return append(c.Attempts.RenamedOptions(), query.Renamed{Former: "max_response", Current: "max_response_size"})
}

// OptionChoices returns the split layouts.
func (*Config) OptionChoices() map[string][]string {
	return map[string][]string{"split_layout": LayoutNames}
}

// NewProtocol builds the protocol.
func (c *Config) NewProtocol() (query.Protocol, error) {
	layout, _ := ParseLayout(c.SplitLayout) // checked by Validate
	x := c.Exchange()
	return &QueryProtocol{Client: &Client{Timeout: x.Timeout, Retries: x.Retries, Layout: layout,
		MaxPackets: c.MaxPackets, MaxMessage: c.MaxResponseSize}}, nil
}

var (
	_ query.ProtocolConfig = (*Config)(nil)
	_ query.Renamer        = (*Config)(nil)
	_ query.Chooser        = (*Config)(nil)
)
