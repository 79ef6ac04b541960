package caddymodule

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/dgram"
	"github.com/gamegate/gamegate/handlers/relay"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
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
	// A binding with no traffic for this long ends; its client's next
	// message gets ERROR 1. Default: 10s.
	IdleTimeout caddy.Duration `json:"idle_timeout,omitempty"`
	// The idle timeout of a binding with no connected peer yet (a host
	// waiting for players). Default: 60s.
	AloneTimeout caddy.Duration `json:"alone_timeout,omitempty"`
	// Largest RELAY content forwarded, in bytes. Default: 1400.
	MaxContent int `json:"max_content,omitempty"`
	// Most bindings held; a BIND of a new allocation past it is dropped.
	// Default: 100000.
	MaxBindings int `json:"max_bindings,omitempty"`
	// Byte order of the BIND nonce: "little" (what the shipped client
	// sends) or "big" (what the protocol page says). Default: little.
	NonceByteOrder string `json:"nonce_byte_order,omitempty"`
	// Handlers with the same name, max_bindings, idle_timeout and
	// alone_timeout share their bindings, and a reloaded configuration
	// takes them over; a reload that changes any of these starts a new
	// table (clients get ERROR 3 and bind again). Default: relay.
	Name string `json:"name,omitempty"`

	engine   *relay.Engine
	tableKey string
	logger   *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (*Relay) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "layer4.handlers.relay",
		New: func() caddy.Module { return new(Relay) },
	}
}

// relayTables holds the binding tables across configuration reloads.
var relayTables = caddy.NewUsagePool()

var liveRelayTables liveSet[*relay.Table]

type pooledRelayTable struct{ *relay.Table }

func (p pooledRelayTable) Destruct() error {
	liveRelayTables.remove(p.Table)
	return p.Table.Destruct()
}

// Provision sets up the relay and adopts (or creates) its binding table.
func (h *Relay) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	warnExposedLayer4(ctx)
	if h.IdleTimeout == 0 {
		h.IdleTimeout = caddy.Duration(relay.DefaultIdleTimeout)
	}
	if h.AloneTimeout == 0 {
		h.AloneTimeout = caddy.Duration(relay.DefaultAloneTimeout)
	}
	if h.MaxContent == 0 {
		h.MaxContent = wirerelay.DefaultMaxRelayContent
	}
	if h.MaxBindings == 0 {
		h.MaxBindings = relay.DefaultMaxBindings
	}
	if h.NonceByteOrder == "" {
		h.NonceByteOrder = "little"
	}
	if h.Name == "" {
		h.Name = "relay"
	}
	if err := h.Validate(); err != nil {
		return err
	}
	secrets, err := replacedEach("relay", "secrets", h.Secrets)
	if err != nil {
		return err
	}
	sealer, err := relay.NewSealer(secrets...)
	if err != nil {
		return fmt.Errorf("relay: secrets: %w", err)
	}
	if err := refuseWeakSecrets(ctx, "relay", "secrets", h.Secrets, secrets, minExposedSecret); err != nil {
		return err
	}
	// Everything the table holds is in its key: handlers that share a name
	// but not these settings keep separate tables rather than one of them
	// silently running with the other's timeouts.
	h.tableKey = fmt.Sprintf("%s/%d/%s/%s", h.Name, h.MaxBindings,
		time.Duration(h.IdleTimeout), time.Duration(h.AloneTimeout))
	val, _, err := relayTables.LoadOrNew(h.tableKey, func() (caddy.Destructor, error) {
		t, err := relay.NewTable(relay.TableConfig{
			Limit:        h.MaxBindings,
			IdleTimeout:  time.Duration(h.IdleTimeout),
			AloneTimeout: time.Duration(h.AloneTimeout),
			Sweep:        min(time.Second, time.Duration(h.IdleTimeout)/4),
		})
		if err != nil {
			return nil, err
		}
		liveRelayTables.add(t)
		return pooledRelayTable{t}, nil
	})
	if err != nil {
		return err
	}
	h.engine, err = relay.NewEngine(relay.Config{
		Sealer:         sealer,
		MaxContent:     h.MaxContent,
		NonceBigEndian: h.NonceByteOrder == "big",
	}, val.(pooledRelayTable).Table)
	if err != nil {
		return err
	}
	return relayMetrics.register(ctx.GetMetricsRegistry())
}

// Ranges of the relay handler's options.
var (
	relayMaxContentRange  = intRange{1, 0xFFFF}
	relayMaxBindingsRange = intRange{1, 1 << 30}
)

// Validate checks the configuration.
func (h *Relay) Validate() error {
	c := newChecker("relay")
	if len(h.Secrets) == 0 {
		c.fail("secrets", "is required")
	}
	c.durationIn("idle_timeout", h.IdleTimeout, ttlRange)
	c.durationIn("alone_timeout", h.AloneTimeout, ttlRange)
	c.optIn("max_content", int64(h.MaxContent), relayMaxContentRange)
	c.optIn("max_bindings", int64(h.MaxBindings), relayMaxBindingsRange)
	c.oneOf("nonce_byte_order", h.NonceByteOrder, "little", "big")
	return c.err
}

// Cleanup releases the handler's hold on its binding table.
func (h *Relay) Cleanup() error {
	if h.tableKey == "" {
		return nil
	}
	_, err := relayTables.Delete(h.tableKey)
	return err
}

// Handle relays the datagrams of one client address until the association
// ends. Messages for other clients go out through the shared socket.
func (h *Relay) Handle(cx *layer4.Connection, _ layer4.Handler) error {
	return serveDatagrams(cx, h, "the relay protocol")
}

// outboxes hold the relay engine's sends for one datagram; a reader takes
// one per datagram, so nothing is allocated once the pool is warm.
var outboxes = sync.Pool{New: func() any { return relay.NewOutbox() }}

// Match reports whether the datagram starts with a relay header.
func (h *Relay) Match(datagram []byte) bool { return matchesRelay(datagram) }

// ServeDatagram relays one datagram, appending what it sends to w.
func (h *Relay) ServeDatagram(w *dgram.Writer, src netip.AddrPort, datagram []byte) {
	out := outboxes.Get().(*relay.Outbox)
	v := h.engine.Handle(relay.Peer{AddrPort: src}, datagram, out)
	relayMetrics.datagrams.count(v)
	for _, s := range out.Sends {
		w.WriteTo(s.Data, s.To)
	}
	outboxes.Put(out)
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
func (h *Relay) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseModuleBlock(d, "relay", nil, func(opt string) error {
		var err error
		switch opt {
		case "secrets":
			h.Secrets, err = parseArgs(d)
		case "idle_timeout":
			h.IdleTimeout, err = parseDuration(d)
		case "alone_timeout":
			h.AloneTimeout, err = parseDuration(d)
		case "max_content":
			h.MaxContent, err = parseSize[int](d, relayMaxContentRange)
		case "max_bindings":
			h.MaxBindings, err = parseIntIn(d, relayMaxBindingsRange)
		case "nonce_byte_order":
			h.NonceByteOrder, err = parseOneOf(d, "little", "big")
		case "name":
			h.Name, err = parseSingleArg(d)
		default:
			return unknownOption(d, "relay", opt)
		}
		return err
	})
}

var relayMetrics = newRelayMetrics()

type relayMetricSet struct {
	metricSet
	datagrams enumCounters[relay.Verdict]
}

func newRelayMetrics() *relayMetricSet {
	m := &relayMetricSet{metricSet: metricSet{subsystem: "relay"}}
	m.datagrams = newEnumCounters(&m.metricSet, "datagrams_total",
		"Relay datagrams handled, by outcome (relayed, bound, pinged, error_sent, dropped reasons, …).",
		"outcome", relay.NumVerdicts)
	m.gaugeFunc("bindings", "Live relay bindings (allocations bound to a client address).", func() float64 {
		return float64(liveRelayTables.sum((*relay.Table).Len))
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
	_ dgram.Protocol        = (*Relay)(nil)
)
