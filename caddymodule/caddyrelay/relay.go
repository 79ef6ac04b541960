package caddyrelay

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/relay"
)

func init() {
	caddy.RegisterModule(new(Relay))
}

// Relay is a Unity Relay server on a caddy-l4 UDP listener: clients bind to
// the allocations the relay_allocations API gave them (BIND, authenticated
// with the allocation key inside the sealed connection data), connect to
// hosts (CONNECT_REQUEST) and exchange messages (RELAY) through the gateway,
// with unmodified Unity Transport clients. Bindings survive configuration
// reloads.
type Relay struct {
	// Secrets that seal and open connection data; the first seals (used by
	// relay_allocations with the same secrets), all open, so a secret can be
	// rotated. Placeholders such as {env.RELAY_SECRET} are replaced. At
	// least 16 bytes each; on a server that listens beyond loopback, at
	// least 32 bytes and not a development default (the relay refuses to
	// start otherwise). Required.
	Secrets []string `json:"secrets,omitempty"`
	// The relay's options: idle_timeout, alone_timeout, max_content,
	// max_bindings, nonce_byte_order.
	relay.Config
	// Handlers with the same name, max_bindings, idle_timeout and
	// alone_timeout share their bindings, and a reloaded configuration
	// takes them over; a reload that changes any of these starts a new
	// table (clients get ERROR 3 and bind again). Default: relay.
	Name string `json:"name,omitempty"`

	// The relay server Provision builds, embedded so that the module
	// serves its datagrams wherever it is a dgram.Protocol.
	*relayServer `json:"-"`
	tableKey     string
}

type relayServer = relay.Server

// CaddyModule returns the Caddy module information.
func (*Relay) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.relay",
		New: func() caddy.Module { return new(Relay) },
	}
}

// relayTables holds the binding tables across configuration reloads.
var relayTables = caddyglue.NewLivePool[*relay.Table](nil)

// Provision builds the relay on the pooled binding table of its name and
// settings.
func (h *Relay) Provision(ctx caddy.Context) error {
	caddyglue.WarnExposedLayer4(ctx)
	if h.Name == "" {
		h.Name = relay.DefaultName
	}
	secrets, err := caddyglue.ReplacedEach("", "secrets", h.Secrets)
	if err != nil {
		return err
	}
	cfg := h.Config.WithDefaults()
	if cfg.Sealer, err = relay.NewSealer(secrets...); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if err := caddyglue.RefuseWeakSecrets(ctx, "", "secrets", h.Secrets, secrets, caddyglue.MinExposedSecret); err != nil {
		return err
	}
	cfg.Count = RelayMetrics.datagrams.Count
	// Everything the table holds is in its key: handlers that share a name
	// but not these settings keep separate tables rather than one of them
	// silently running with the other's timeouts.
	key := fmt.Sprintf("%s/%d/%s/%s", h.Name, cfg.MaxBindings, cfg.IdleTimeout, cfg.AloneTimeout)
	table, err := relayTables.LoadOrNew(key, func() (*relay.Table, error) {
		return relay.NewTable(cfg.TableConfig())
	})
	if err != nil {
		return err
	}
	h.tableKey = key
	if h.relayServer, err = relay.NewServer(cfg, table); err != nil {
		return err
	}
	return caddyglue.RegisterDatagramMetrics(ctx, &RelayMetrics.MetricSet)
}

// Validate checks the configuration. The secrets are checked as the
// sealer is made from them, in Provision: their placeholders are replaced
// there.
func (h *Relay) Validate() error { return h.Config.Validate() }

// Cleanup releases the handler's hold on its binding table.
func (h *Relay) Cleanup() error {
	if h.tableKey == "" {
		return nil
	}
	return relayTables.Release(h.tableKey)
}

// Handle relays the datagrams of one client address until the association
// ends. Messages for other clients go out through the shared socket.
func (h *Relay) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	return caddyglue.ServeDatagrams(cx, h.relayServer, "the relay protocol")
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	relay {
//		secrets          <secret> [<older_secret>...]
//		idle_timeout     <duration>
//		alone_timeout    <duration>
//		max_content      <bytes>
//		max_bindings     <count>
//		nonce_byte_order little|big
//		name             <name>
//	}
//
// A number is read in the range the relay's Config holds it to
// (relay.Config.Validate), so that an error shows the option's line; the
// Config's Validate then checks the whole block once, its error shown at
// the line of the option it names.
func (h *Relay) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	const module = "relay"
	return caddyglue.ParseConfigBlock(d, module, nil, nil, func(opt string) error {
		var err error
		switch opt {
		case "secrets":
			h.Secrets, err = caddyglue.ParseArgs(d)
		case "idle_timeout":
			h.IdleTimeout, err = caddyglue.ParseConfigDuration(d)
		case "alone_timeout":
			h.AloneTimeout, err = caddyglue.ParseConfigDuration(d)
		case "max_content":
			h.MaxContent, err = caddyglue.ParseSize[int](d, configRange(opt))
		case "max_bindings":
			h.MaxBindings, err = caddyglue.ParseIntIn(d, configRange(opt))
		case "nonce_byte_order":
			h.NonceByteOrder, err = caddyglue.ParseOneOf(d, relay.NonceLittleEndian, relay.NonceBigEndian)
		case "name":
			h.Name, err = caddyglue.ParseSingleArg(d)
		default:
			return caddyglue.UnknownOption(d, module, opt)
		}
		return err
	}, h.Validate)
}

// configRange is the range the relay's Config holds option opt to.
func configRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[relay.Config](opt)
}

var RelayMetrics = newRelayMetrics()

type relayMetricSet struct {
	caddyglue.MetricSet
	datagrams caddyglue.EnumCounters[relay.Verdict]
}

func newRelayMetrics() *relayMetricSet {
	m := &relayMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "relay"}}
	m.datagrams = caddyglue.NewEnumCounters(&m.MetricSet, "datagrams_total",
		"Relay datagrams handled, by outcome (relayed, bound, pinged, error_sent, dropped reasons, …).",
		"outcome", relay.NumVerdicts)
	m.GaugeFunc("bindings", "Live relay bindings (allocations bound to a client address).", func() float64 {
		return float64(relayTables.Sum((*relay.Table).Len))
	})
	return m
}

// Interface guards
var (
	_ caddy.Provisioner     = (*Relay)(nil)
	_ caddy.Validator       = (*Relay)(nil)
	_ caddy.CleanerUpper    = (*Relay)(nil)
	_ caddyfile.Unmarshaler = (*Relay)(nil)
	_ layer4.NextHandler    = (*Relay)(nil)
)
