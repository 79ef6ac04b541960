package caddydiscovery

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/discovery"
	"github.com/gamegate/gamegate/handlers/qos"
	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/ratelimit"
	"github.com/gamegate/gamegate/store/redisstore"
)

func init() {
	caddy.RegisterModule(new(QoSDiscovery))
	httpcaddyfile.RegisterHandlerDirective("qos_discovery", parseQoSDiscoveryDirective)
	httpcaddyfile.RegisterDirectiveOrder("qos_discovery", httpcaddyfile.Before, "respond")
}

// QoSDiscovery is the QoS discovery service: GET /v1/fleets/{fleet_id}/servers
// answers the QoS servers of a fleet as {"servers": [...]}, compatible with
// the Multiplay discovery protocol and the shipped Unity client, with
// ETag/304, 403, 404 and 500 as the protocol specifies. Requests whose path
// does not end in /v1/fleets/{fleet_id}/servers go to the next handler.
//
// A fleet's list comes from the first of: the admin API
// (/qos-discovery/{name}/fleets/{fleet_id}), the fleets file, the inline
// fleets. The ETag of a list depends on its content only, so clients keep
// getting 304s across reloads and restarts while it is unchanged.
type QoSDiscovery struct {
	// The discovery options: fleets, fleets_file, file_poll, field_names,
	// strong_etag, max_age, allow, api_keys, health_check, name.
	discovery.Config

	service *discovery.Service
	handler discovery.Handler
	logger  *zap.Logger
	// xAPIKeyWarned: the warning that clients send keys as X-Api-Key is
	// logged once per configuration.
	xAPIKeyWarned sync.Once
}

// CaddyModule returns the Caddy module information.
func (*QoSDiscovery) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.qos_discovery",
		New: func() caddy.Module { return new(QoSDiscovery) },
	}
}

// discoveryOverrides holds each name's admin-set fleets across reloads.
var discoveryOverrides = caddy.NewUsagePool()

// pooledOverrides is what a name's handlers keep across reloads: the
// admin-set fleets, and the failed API key attempts of each network (a
// reload must not hand a guesser a fresh burst).
type pooledOverrides struct {
	*discovery.Overrides
	failures *ratelimit.Table[string]
}

func (p pooledOverrides) Destruct() error {
	p.Unshare()
	return nil
}

// Provision loads the fleet sources and starts the file watcher and health
// checks.
func (h *QoSDiscovery) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	// NewService refuses what Validate refuses, before starting anything.
	cfg := h.Config.WithDefaults()
	h.Name = cfg.Name // the admin-set fleets' and the metrics' name
	var access discovery.Access
	access.Allow, _ = cfg.AllowNetworks() // Validate checks them
	keys, err := caddyglue.ReplacedEach("", "api_keys", h.APIKeys)
	if err != nil {
		return err
	}
	if access.Keys, err = httpauth.New(keys...); err != nil {
		return fmt.Errorf("api_keys: %w", err)
	}
	// The relay allocations API's rules for its tokens: long enough
	// beyond loopback, and a limit on the failed attempts.
	if err := caddyglue.RefuseWeakSecrets(ctx, "", "api_keys", h.APIKeys, keys, caddyglue.MinExposedToken); err != nil {
		return err
	}
	val, _, err := discoveryOverrides.LoadOrNew(h.Name, func() (caddy.Destructor, error) {
		return pooledOverrides{discovery.NewOverrides(), ratelimit.NewTable[string](relay.DefaultMaxClients, ratelimit.NewClock(nil))}, nil
	})
	if err != nil {
		return err
	}
	pooled := val.(pooledOverrides)
	// The relay allocations API's limiter, at its defaults.
	failureLimit, err := ratelimit.NewLimit(relay.DefaultAuthFailureRate, relay.DefaultAuthFailureBurst)
	if err != nil {
		return err
	}
	access.Failures = &relay.LocalLimiter{Table: pooled.failures, Limit: failureLimit, MaxKeys: relay.DefaultMaxClients}
	overrides := pooled.Overrides
	cfg.Overrides = overrides
	cfg.Private = access.Restricted()
	cfg.Logger = h.logger
	cfg.OnFileLoad = func(err error) {
		if err != nil {
			DiscoveryMetrics.fileErrors.WithLabelValues(h.Name).Inc()
			DiscoveryMetrics.fileOK.WithLabelValues(h.Name).Set(0)
		} else {
			DiscoveryMetrics.fileLoads.WithLabelValues(h.Name).Inc()
			DiscoveryMetrics.fileOK.WithLabelValues(h.Name).Set(1)
		}
	}
	if cfg.Health != nil {
		// The QoS servers of this process answer these checks even
		// while they ban the Checker's address.
		cfg.Health.ProbeKey = qos.ProcessProbeKey()
	}
	h.service, err = discovery.NewService(cfg)
	if err != nil {
		_, _ = discoveryOverrides.Delete(h.Name)
		return err
	}
	h.handler = discovery.Handler{Service: h.service, Access: access, ClientIP: caddyglue.ClientIP}
	// Health checks, the fleets file's polling and the shared store's
	// start with the configuration, not when it is only validated.
	shared, _ := ctx.Storage().(*redisstore.Store)
	if err := caddyglue.WhenStarted(ctx, func() {
		// With a storage that nodes share (storage redis), admin changes
		// go through it, so that every node serves the same fleets.
		if shared != nil {
			overrides.Share(shared, h.Name, h.logger)
		} else {
			overrides.Unshare()
		}
		h.service.Start()
	}); err != nil {
		return err
	}
	liveDiscoveryServices.Add(h.service)
	return DiscoveryMetrics.Register(ctx.GetMetricsRegistry())
}

// Validate checks the configuration (discovery.Config.Validate).
func (h *QoSDiscovery) Validate() error { return h.Config.Validate() }

// durationRange is the range the discovery Config holds option opt to.
func durationRange(opt string) caddyglue.DurationRange {
	return caddyglue.ConfigDurationRange[discovery.Config](opt)
}

// Cleanup stops the file watcher and health checks.
func (h *QoSDiscovery) Cleanup() error {
	if h.service == nil {
		return nil
	}
	h.service.Stop()
	liveDiscoveryServices.Remove(h.service)
	_, err := discoveryOverrides.Delete(h.Name)
	return err
}

// ServeHTTP answers discovery requests and passes other paths on.
func (h *QoSDiscovery) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	fleet, ok := discovery.FleetFromPath(r.URL.Path)
	if !ok {
		return next.ServeHTTP(w, r)
	}
	code := h.handler.ServeFleet(w, r, fleet)
	DiscoveryMetrics.requests.Count(code)
	if code != http.StatusForbidden && h.handler.Access.Keys.Required() && r.Header.Get("Authorization") == "" && r.Header.Get("X-Api-Key") != "" {
		// Caddy's access log records X-Api-Key whole; no module can
		// redact it. Tell the operator, once, what clients do.
		h.xAPIKeyWarned.Do(func() {
			h.logger.Warn("a client sent its API key as X-Api-Key, which Caddy's access log records in plain text; have clients send Authorization: Bearer <key> (which it redacts), or filter the header out of the access log")
		})
	}
	if code == http.StatusOK || code == http.StatusNotModified {
		// Only a fleet that exists is answered 200 or 304, so the label's
		// values are the configured fleets (a Caddyfile, a fleets file or
		// the authenticated admin API), never ids a request made up.
		DiscoveryMetrics.fleetRequests.WithLabelValues(fleet).Inc()
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	qos_discovery {
//		fleet <fleet_id> {
//			server <region_id> <location_id> <ip:port> [<ip:port>]
//		}
//		fleets_file  <path>
//		file_poll    <duration>
//		field_names  both|seed|unity
//		strong_etag
//		max_age      <duration>
//		allow        <cidr|ip> ...
//		api_keys     <key> ...
//		health_check {
//			fleets   <fleet_id> ...
//			interval <duration>
//			failures <count>
//			requests <count>
//			wait     <duration>
//		}
//		name <name>
//	}
//
// A server line gives the region, the location ID, and one or two addresses
// (at most one IPv4 and one IPv6) sharing one port.
func (h *QoSDiscovery) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseModuleBlock(d, "", []string{"fleet"}, func(opt string) error {
		var err error
		switch opt {
		case "fleet":
			err = h.parseFleet(d)
		case "fleets_file":
			h.File, err = caddyglue.ParseSingleArg(d)
		case "file_poll":
			h.FilePoll, err = caddyglue.ParseConfigDurationIn(d, durationRange(opt))
		case "field_names":
			h.FieldNames, err = caddyglue.ParseOneOf(d, "both", "seed", "unity")
		case "strong_etag":
			err = caddyglue.ParseFlag(d, &h.StrongETag)
		case "max_age":
			h.MaxAge, err = caddyglue.ParseConfigDurationIn(d, durationRange(opt))
		case "allow":
			h.Allow, err = caddyglue.ParseArgs(d)
			for _, a := range h.Allow {
				if _, perr := caddyglue.ParsePrefix(a); perr != nil {
					return d.Errf("allow: '%s' is not a CIDR or IP address", a)
				}
			}
		case "api_keys":
			h.APIKeys, err = caddyglue.ParseArgs(d)
		case "health_check":
			err = h.parseHealthCheck(d)
		case "name":
			h.Name, err = caddyglue.ParseSingleArg(d)
		default:
			return caddyglue.UnknownOption(d, "", opt)
		}
		return err
	})
}

func (h *QoSDiscovery) parseFleet(d *caddyfile.Dispenser) error {
	id, err := caddyglue.ParseSingleArg(d) // a block may follow
	if err != nil {
		return err
	}
	if err := discovery.ValidateFleetID(id); err != nil {
		return d.Errf("fleet: %v", err)
	}
	if _, dup := h.Fleets[id]; dup {
		return d.Errf("duplicate fleet '%s'", id)
	}
	if h.Fleets == nil {
		h.Fleets = make(map[string][]discovery.ConfiguredServer)
	}
	var servers []discovery.ConfiguredServer
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if d.Val() != "server" {
			return d.Errf("fleet '%s': unrecognized option '%s'", id, d.Val())
		}
		args := d.RemainingArgs()
		if len(args) < 3 || len(args) > 4 {
			return d.Errf("fleet '%s': server takes <region_id> <location_id> <ip:port> [<ip:port>]", id)
		}
		s := discovery.ConfiguredServer{RegionID: args[0]}
		if s.LocationID, err = strconv.ParseInt(args[1], 10, 64); err != nil || s.LocationID < 0 {
			return d.Errf("fleet '%s': location ID '%s' is not a non-negative integer", id, args[1])
		}
		for _, a := range args[2:] {
			ap, err := netip.ParseAddrPort(a)
			if err != nil || ap.Port() == 0 {
				return d.Errf("fleet '%s': '%s' is not an ip:port address", id, a)
			}
			if ap.Addr().Unmap().IsUnspecified() {
				return d.Errf("fleet '%s': '%s' means every address of a machine, which no client can reach: give the address clients reach the server at", id, a)
			}
			if s.Port != 0 && s.Port != int(ap.Port()) {
				return d.Errf("fleet '%s': a server's IPv4 and IPv6 addresses must share one port", id)
			}
			s.Port = int(ap.Port())
			ip := ap.Addr().Unmap()
			if ip.Is4() {
				if s.IPv4 != "" {
					return d.Errf("fleet '%s': a server has at most one IPv4 address", id)
				}
				s.IPv4 = ip.String()
			} else {
				if s.IPv6 != "" {
					return d.Errf("fleet '%s': a server has at most one IPv6 address", id)
				}
				s.IPv6 = ip.String()
			}
		}
		servers = append(servers, s)
	}
	h.Fleets[id] = servers
	return nil
}

func (h *QoSDiscovery) parseHealthCheck(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	hc := &discovery.HealthConfig{}
	if err := caddyglue.ParseBlock(d, "health_check", nil, func(opt string) error {
		var err error
		switch opt {
		case "fleets":
			hc.Fleets, err = caddyglue.ParseArgs(d)
		case "interval":
			hc.Interval, err = caddyglue.ParseConfigDurationIn(d, caddyglue.ConfigDurationRange[discovery.HealthConfig](opt))
		case "failures":
			hc.Failures, err = caddyglue.ParseIntIn(d, caddyglue.ConfigRange[discovery.HealthConfig](opt))
		case "requests":
			hc.Requests, err = caddyglue.ParseIntIn(d, caddyglue.ConfigRange[discovery.HealthConfig](opt))
		case "wait":
			hc.Wait, err = caddyglue.ParseConfigDurationIn(d, caddyglue.ConfigDurationRange[discovery.HealthConfig](opt))
		default:
			return caddyglue.UnknownOption(d, "health_check", opt)
		}
		return err
	}); err != nil {
		return err
	}
	h.Health = hc
	return nil
}

func parseQoSDiscoveryDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(QoSDiscovery)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

var liveDiscoveryServices caddyglue.LiveSet[*discovery.Service]

// DiscoveryMetrics are the discovery handler's Prometheus metrics.
var DiscoveryMetrics = newDiscoveryMetrics()

type discoveryMetricSet struct {
	caddyglue.MetricSet
	requests      caddyglue.CodeCounters
	fleetRequests *prometheus.CounterVec
	fileLoads     *prometheus.CounterVec
	fileErrors    *prometheus.CounterVec
	fileOK        *prometheus.GaugeVec
}

func newDiscoveryMetrics() *discoveryMetricSet {
	m := &discoveryMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "discovery"}}
	m.requests = m.CodeCounters("requests_total", "Discovery requests answered, by status code.",
		200, 304, 401, 403, 404, 405, 500)
	m.fleetRequests = m.CounterVec("fleet_requests_total",
		"Discovery requests answered with a fleet's servers (200 or 304), by fleet id.", "fleet")
	m.fileLoads = m.CounterVec("fleets_file_loads_total",
		"Fleets files loaded successfully after a change, by handler name.", "name")
	m.fileErrors = m.CounterVec("fleets_file_errors_total",
		"Changes to a fleets file that could not be loaded (the last good list stays in service), by handler name.", "name")
	m.fileOK = m.GaugeVec("fleets_file_ok",
		"1 if the fleets file was last loaded successfully, 0 if not, by handler name.", "name")
	m.GaugeFunc("withheld_servers",
		"QoS servers failing their health checks, once per fleet listing them (a fleet whose servers all fail is still served whole).",
		func() float64 { return float64(liveDiscoveryServices.Sum((*discovery.Service).Withheld)) })
	return m
}

// Interface guards
var (
	_ caddy.Provisioner           = (*QoSDiscovery)(nil)
	_ caddy.Validator             = (*QoSDiscovery)(nil)
	_ caddy.CleanerUpper          = (*QoSDiscovery)(nil)
	_ caddyfile.Unmarshaler       = (*QoSDiscovery)(nil)
	_ caddyhttp.MiddlewareHandler = (*QoSDiscovery)(nil)
)
