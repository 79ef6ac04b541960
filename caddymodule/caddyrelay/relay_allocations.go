package caddyrelay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/relay"
	"github.com/gamegate/gamegate/internal/netaddr"
)

func init() {
	caddy.RegisterModule(new(RelayAllocations))
	httpcaddyfile.RegisterHandlerDirective("relay_allocations", parseRelayAllocationsDirective)
	httpcaddyfile.RegisterDirectiveOrder("relay_allocations", httpcaddyfile.Before, "respond")
}

// RelayAllocations is the Unity Relay allocations REST API, in the shapes of
// Unity's Relay Allocations service, so that unmodified Unity clients get
// their allocations and join codes from gamegate and then use gamegate's
// relay (the layer4 relay handler, which opens their connection data with
// the same secrets):
//
//   - POST .../v1/allocate {"maxConnections", "region"?}: 201 with a new
//     allocation.
//   - POST .../v1/joincode {"allocationId"}: 201 with a new join code, or 200
//     with the allocation's current one while it is valid.
//   - POST .../v1/join {"joinCode"} (any case): 200 with a new allocation for
//     the joiner (one connection) and the host's connection data.
//   - GET .../v1/regions: 200 with the configured regions.
//
// Successes are {"meta": {"requestId", "status"}, "data": {...}}; errors are
// {"status", "title", "detail", "type", "code", "details"?}, where code is
// the value of the Unity SDK's RelayExceptionReason of the same meaning
// (15001 malformed request, 15400 invalid value, 15007 unknown region,
// 15401 bad token, 15008 unknown or expired allocation, 15009 unknown or
// expired join code, 15405 method, 15413 body too large, 15500 storage
// failure, 15010 max_allocations reached, 15503 no free join code) and type
// is urn:gamegate:relay:<kind>. Allocations list one endpoint, plain UDP at
// public_address: gamegate's relay speaks neither DTLS nor WebSocket.
//
// Requests whose path does not end in one of the four endpoints go to the
// next handler, so the API can share a site and live under a path prefix.
//
// Allocations and join codes are kept in Caddy's storage (gamegate/relay/
// allocations/<uuid> and gamegate/relay/joincodes/<CODE>), so gateways
// sharing a storage module share their join codes. Expired records are
// refused and deleted when met, and swept every 5 minutes.
type RelayAllocations struct {
	// Secrets that seal connection data, as the relay's secrets: the
	// first seals, all open. Each must be at least 16 bytes once
	// placeholders such as {env.RELAY_SECRET} are replaced, and on a
	// server that listens beyond loopback at least 32 bytes and not a
	// development default. Required.
	Secrets []string `json:"secrets,omitempty"`
	// Bearer tokens, any of which a caller must send as "Authorization:
	// Bearer <token>"; others get 401. Placeholders are replaced. On a
	// server that listens beyond loopback each must be at least 16 bytes
	// and not a development default. Required unless insecure_no_auth is
	// set.
	Tokens []string `json:"tokens,omitempty"`
	// Serve the API without authentication, so that anyone who reaches it
	// can allocate on the relay. Cannot be combined with tokens.
	// Default: false.
	InsecureNoAuth bool `json:"insecure_no_auth,omitempty"`
	// The relay's UDP address as clients reach it, host:port, written into
	// every allocation (relayServer and serverEndpoints). The host may be
	// a name, but it is also written as relayServer's ipV4, which Unity
	// deprecated yet older client code still reads, so an IPv4 address
	// suits every client. Placeholders are replaced. Required.
	PublicAddress string `json:"public_address,omitempty"`
	// Regions offered by /v1/regions and accepted by /v1/allocate; the
	// first is the default. Each is {"id", "description"} or just the ID
	// as a string. An ID is 1 to 64 letters, digits, '.', '_' or '-'; a
	// missing description is the ID. Default: one region, default.
	Regions []RelayAllocationsRegion `json:"regions,omitempty"`
	// The API's options: max_connections, allocation_ttl, join_code_ttl,
	// max_allocations, max_body, the rates and bursts, the per-client and
	// per-network limits, the prefixes, any_client_join_code and
	// bind_to_client_network.
	relay.APIOptions

	// Deprecated: the former name of join_code_rate, still read (with a
	// warning at provision).
	FormerJoinCodeRate float64 `json:"joincode_rate,omitempty"`
	// Deprecated: the former name of join_code_burst, still read (with a
	// warning at provision).
	FormerJoinCodeBurst int `json:"joincode_burst,omitempty"`
	// Deprecated: the former name of any_client_join_code, still read
	// (with a warning at provision).
	FormerAnyClientJoinCode bool `json:"any_client_joincode,omitempty"`

	api     *relay.API
	limitID string
	logger  *zap.Logger
}

// RelayAllocationsRegion is a region of the allocations API.
type RelayAllocationsRegion struct {
	// The region ID clients request. Required.
	ID string `json:"id,omitempty"`
	// A human-readable description. Default: the ID.
	Description string `json:"description,omitempty"`
}

// UnmarshalJSON also accepts a region given as its ID alone, "eu-west".
func (r *RelayAllocationsRegion) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*r = RelayAllocationsRegion{}
		return json.Unmarshal(b, &r.ID)
	}
	type plain RelayAllocationsRegion
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // as strict as Caddy is with the rest
	return dec.Decode((*plain)(r))
}

// CaddyModule returns the Caddy module information.
func (*RelayAllocations) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.relay_allocations",
		New: func() caddy.Module { return new(RelayAllocations) },
	}
}

// apiRange is the range the API's Config holds option opt to (the
// per-client and per-network counts are read in max_allocations' range,
// their bound).
func apiRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[relay.APIConfig](opt)
}

// relayAPILimiters holds, by public address, what must survive
// configuration reloads: the allocation counts, and the clients' request
// rates (a reload must not hand every client a fresh burst).
var relayAPILimiters = caddy.NewUsagePool()

type pooledLimiter struct {
	*relay.AllocationLimiter
	rates *relay.ClientRates
}

func (pooledLimiter) Destruct() error { return nil }

// Provision replaces placeholders in the secrets, tokens and public address,
// and sets up the API on Caddy's storage.
func (h *RelayAllocations) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	for _, err := range []error{
		caddyglue.Renamed(ctx, "relay_allocations", "joincode_rate", "join_code_rate", &h.FormerJoinCodeRate, &h.JoinCodeRate),
		caddyglue.Renamed(ctx, "relay_allocations", "joincode_burst", "join_code_burst", &h.FormerJoinCodeBurst, &h.JoinCodeBurst),
		caddyglue.Renamed(ctx, "relay_allocations", "any_client_joincode", "any_client_join_code", &h.FormerAnyClientJoinCode, &h.AnyClientJoinCode),
	} {
		if err != nil {
			return err
		}
	}
	secrets, err := caddyglue.ReplacedEach("", "secrets", h.Secrets)
	if err != nil {
		return err
	}
	sealer, err := relay.NewSealer(secrets...)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	tokens, err := caddyglue.ReplacedEach("", "tokens", h.Tokens)
	if err != nil {
		return err
	}
	if err := caddyglue.RefuseWeakSecrets(ctx, "", "secrets", h.Secrets, secrets, caddyglue.MinExposedSecret); err != nil {
		return err
	}
	if err := caddyglue.RefuseWeakSecrets(ctx, "", "tokens", h.Tokens, tokens, caddyglue.MinExposedToken); err != nil {
		return err
	}
	addr := caddy.NewReplacer().ReplaceKnown(h.PublicAddress, "")
	host, port, err := splitPublicAddress(addr)
	if err != nil {
		return fmt.Errorf("public_address: %q: %w", addr, err)
	}
	h.limitID = net.JoinHostPort(host, strconv.Itoa(int(port)))
	val, _, err := relayAPILimiters.LoadOrNew(h.limitID, func() (caddy.Destructor, error) {
		return pooledLimiter{relay.NewAllocationLimiter(), relay.NewClientRates(nil)}, nil
	})
	if err != nil {
		return err
	}
	cfg := h.config()
	cfg.Sealer = sealer
	cfg.Store = ctx.Storage()
	cfg.Tokens = tokens
	cfg.PublicHost, cfg.PublicPort = host, int(port)
	cfg.Limiter = val.(pooledLimiter).AllocationLimiter
	cfg.Rates = val.(pooledLimiter).rates
	cfg.ClientIP = caddyglue.ClientIP
	cfg.Logger = h.logger
	cfg.OnAllocation = RelayAPIMetrics.allocations.Inc
	cfg.OnJoinCode = RelayAPIMetrics.joinCodes.Inc
	// A shared storage (storage redis) also takes the limit decisions, so
	// that every node enforces them together.
	cfg.Shared, _ = ctx.Storage().(relay.SharedLimits)
	cfg.OnSharedFallback = RelayAPIMetrics.fallback
	h.api, err = relay.NewAPI(cfg)
	if err != nil {
		_, _ = relayAPILimiters.Delete(h.limitID)
		h.limitID = ""
		return fmt.Errorf("%w", err)
	}
	h.api.Start()
	return RelayAPIMetrics.Register(ctx.GetMetricsRegistry())
}

// splitPublicAddress splits the host:port clients reach the relay at,
// refusing an unspecified host (0.0.0.0, ::): a socket may listen there,
// but no client can send to it.
func splitPublicAddress(s string) (string, uint16, error) {
	host, port, err := netaddr.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsUnspecified() {
		return "", 0, fmt.Errorf("%s means every address of this machine, which no client can reach: give the address clients reach the relay at", host)
	}
	return host, port, nil
}

// config is the API's configuration as given (the API fills in the
// defaults), without what Provision adds: the sealer, store, tokens and
// public address once placeholders are replaced, and the callbacks.
func (h *RelayAllocations) config() relay.APIConfig {
	regions := make([]relay.APIRegion, len(h.Regions))
	for i, r := range h.Regions {
		regions[i] = relay.APIRegion{ID: r.ID, Description: r.Description}
	}
	return relay.APIConfig{APIOptions: h.APIOptions, Regions: regions}
}

// Validate checks the configuration: what needs the handler's own
// options (secrets, tokens, public_address as written), then the API's
// (relay.APIConfig.Validate).
func (h *RelayAllocations) Validate() error {
	switch {
	case len(h.Secrets) == 0:
		return errors.New("secrets: at least one secret is required (the relay's secrets, to seal connection data)")
	case len(h.Tokens) == 0 && !h.InsecureNoAuth:
		return errors.New("tokens: at least one token is required, or set insecure_no_auth to let anyone who reaches the API allocate on the relay")
	case len(h.Tokens) > 0 && h.InsecureNoAuth:
		return errors.New("insecure_no_auth cannot be combined with tokens")
	case h.PublicAddress == "":
		return errors.New("public_address is required (the relay's host:port as clients reach it)")
	}
	if !strings.Contains(h.PublicAddress, "{") {
		if _, _, err := splitPublicAddress(h.PublicAddress); err != nil {
			return fmt.Errorf("public_address: %q: %w", h.PublicAddress, err)
		}
	}
	return h.config().Validate()
}

// Cleanup stops the sweeper and releases the allocation count.
func (h *RelayAllocations) Cleanup() error {
	if h.api != nil {
		h.api.Stop()
	}
	if h.limitID == "" {
		return nil
	}
	_, err := relayAPILimiters.Delete(h.limitID)
	return err
}

// ServeHTTP answers the API's endpoints and passes other paths on.
func (h *RelayAllocations) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	ep, ok := relay.APIEndpointFromPath(r.URL.Path)
	if !ok {
		return next.ServeHTTP(w, r)
	}
	RelayAPIMetrics.count(ep, h.api.Serve(w, r, ep))
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	relay_allocations {
//		secrets         <secret> ...
//		tokens          <token> ...
//		insecure_no_auth
//		public_address  <host:port>
//		regions         <id>[=<description>] ...
//		max_connections <count>
//		allocation_ttl  <duration>
//		join_code_ttl   <duration>
//		max_allocations <count>
//		max_body        <bytes>
//		join_rate       <per second>
//		join_burst      <count>
//		allocate_rate   <per second>
//		allocate_burst  <count>
//		join_code_rate  <per second>
//		join_code_burst <count>
//		max_allocations_per_client <count>
//		max_clients     <count>
//		any_client_join_code
//		client_ipv6_prefix <bits>
//		network_ipv4_prefix <bits>
//		network_ipv6_prefix <bits>
//		max_allocations_per_network <count>
//		join_network_rate  <per second>
//		join_network_burst <count>
//		auth_failure_rate  <per second>
//		auth_failure_burst <count>
//		bind_to_client_network
//	}
//
// A description containing spaces is quoted with its ID:
// regions "eu-west=Europe (Frankfurt)" us-east. max_body takes a number of
// bytes, optionally with a unit: B, KB, KiB, MB or MiB. A number is read
// in the range the API's Config holds it to; Validate then checks the
// whole block once (what is required, and what bounds what:
// max_allocations_per_client by max_allocations), its error shown at the
// line of the option it names.
func (h *RelayAllocations) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseConfigBlock(d, "", nil, relayAllocationsFormerNames, func(opt string) error {
		var err error
		switch opt {
		case "secrets":
			h.Secrets, err = caddyglue.ParseArgs(d)
		case "tokens":
			h.Tokens, err = caddyglue.ParseArgs(d)
		case "insecure_no_auth":
			err = caddyglue.ParseFlag(d, &h.InsecureNoAuth)
		case "public_address":
			if h.PublicAddress, err = caddyglue.ParseSingleArg(d); err != nil {
				return err
			}
			if !strings.Contains(h.PublicAddress, "{") {
				if _, _, perr := splitPublicAddress(h.PublicAddress); perr != nil {
					return d.Errf("option 'public_address': '%s': %v", h.PublicAddress, perr)
				}
			}
		case "regions":
			err = h.parseRegions(d)
		case "max_connections":
			h.MaxConnections, err = caddyglue.ParseIntIn(d, apiRange(opt))
		case "allocation_ttl":
			h.AllocationTTL, err = caddyglue.ParseConfigDuration(d)
		case "join_code_ttl":
			h.JoinCodeTTL, err = caddyglue.ParseConfigDuration(d)
		case "max_allocations":
			h.MaxAllocations, err = caddyglue.ParseIntIn(d, apiRange(opt))
		case "max_body":
			h.MaxBody, err = caddyglue.ParseSize[int64](d, apiRange(opt))
		case "join_rate":
			h.JoinRate, err = caddyglue.ParsePositiveFloat(d)
		case "join_burst":
			h.JoinBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "allocate_rate":
			h.AllocateRate, err = caddyglue.ParsePositiveFloat(d)
		case "allocate_burst":
			h.AllocateBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "join_code_rate":
			h.JoinCodeRate, err = caddyglue.ParsePositiveFloat(d)
		case "join_code_burst":
			h.JoinCodeBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "max_allocations_per_client":
			h.MaxAllocationsPerClient, err = caddyglue.ParseIntIn(d, apiRange("max_allocations"))
		case "max_clients":
			h.MaxClients, err = caddyglue.ParseIntIn(d, apiRange(opt))
		case "client_ipv6_prefix":
			h.ClientIPv6Prefix, err = caddyglue.ParseIntIn(d, caddyglue.ClientIPv6PrefixRange)
		case "network_ipv4_prefix":
			h.NetworkIPv4Prefix, err = caddyglue.ParseIntIn(d, caddyglue.NetworkIPv4PrefixRange)
		case "network_ipv6_prefix":
			h.NetworkIPv6Prefix, err = caddyglue.ParseIntIn(d, caddyglue.ClientIPv6PrefixRange)
		case "max_allocations_per_network":
			h.MaxAllocationsPerNetwork, err = caddyglue.ParseIntIn(d, apiRange("max_allocations"))
		case "join_network_rate":
			h.JoinNetworkRate, err = caddyglue.ParsePositiveFloat(d)
		case "join_network_burst":
			h.JoinNetworkBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "auth_failure_rate":
			h.AuthFailureRate, err = caddyglue.ParsePositiveFloat(d)
		case "auth_failure_burst":
			h.AuthFailureBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "bind_to_client_network":
			err = caddyglue.ParseFlag(d, &h.BindToClientNetwork)
		case "any_client_join_code":
			err = caddyglue.ParseFlag(d, &h.AnyClientJoinCode)
		default:
			return caddyglue.UnknownOption(d, "", opt)
		}
		return err
	}, h.Validate)
}

// relayAllocationsFormerNames are the allocations API's renamed options.
var relayAllocationsFormerNames = caddyglue.FormerNames{
	"joincode_rate":       "join_code_rate",
	"joincode_burst":      "join_code_burst",
	"any_client_joincode": "any_client_join_code",
}

func (h *RelayAllocations) parseRegions(d *caddyfile.Dispenser) error {
	args, err := caddyglue.ParseArgs(d)
	if err != nil {
		return err
	}
	seen := make(map[string]bool)
	for _, a := range args {
		id, desc, _ := strings.Cut(a, "=")
		if err := relay.ValidateRegionID(id); err != nil {
			return d.Errf("option 'regions': %v", err)
		}
		if seen[id] {
			return d.Errf("option 'regions': duplicate region '%s'", id)
		}
		seen[id] = true
		h.Regions = append(h.Regions, RelayAllocationsRegion{ID: id, Description: desc})
	}
	return nil
}

func parseRelayAllocationsDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(RelayAllocations)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// RelayAPIMetrics are the allocations API's Prometheus metrics.
var RelayAPIMetrics = newRelayAPIMetrics()

type relayAPIMetricSet struct {
	caddyglue.MetricSet
	requests    *prometheus.CounterVec
	allocations prometheus.Counter
	joinCodes   prometheus.Counter
	fallbacks   *prometheus.CounterVec
}

func newRelayAPIMetrics() *relayAPIMetricSet {
	m := &relayAPIMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "relay"}}
	m.requests = m.CounterVec("api_requests_total",
		"Relay allocations API requests answered, by endpoint and status code.", "endpoint", "code")
	m.allocations = m.Counter("allocations_total",
		"Relay allocations handed out by the allocations API (/v1/allocate and /v1/join).")
	m.joinCodes = m.Counter("join_codes_total", "Join codes created by the allocations API.")
	m.fallbacks = m.CounterVec("api_local_limit_decisions_total",
		"Relay allocations API limit decisions taken by this node alone because the shared store could not take them, by limit (rate, allocations).", "limit")
	return m
}

func (m *relayAPIMetricSet) fallback(limit string) { m.fallbacks.WithLabelValues(limit).Inc() }

func (m *relayAPIMetricSet) count(ep relay.APIEndpoint, code int) {
	m.requests.WithLabelValues(ep.String(), strconv.Itoa(code)).Inc()
}

// Interface guards
var (
	_ caddy.Provisioner           = (*RelayAllocations)(nil)
	_ caddy.Validator             = (*RelayAllocations)(nil)
	_ caddy.CleanerUpper          = (*RelayAllocations)(nil)
	_ caddyfile.Unmarshaler       = (*RelayAllocations)(nil)
	_ caddyhttp.MiddlewareHandler = (*RelayAllocations)(nil)
)
