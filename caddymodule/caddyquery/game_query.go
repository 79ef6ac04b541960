package caddyquery

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/games"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/internal/duration"
	"github.com/gamegate/gamegate/internal/netaddr"
)

func init() {
	caddy.RegisterModule(new(GameQuery))
	httpcaddyfile.RegisterHandlerDirective("game_query", parseGameQueryDirective)
	httpcaddyfile.RegisterDirectiveOrder("game_query", httpcaddyfile.Before, "respond")
}

// GameQuery answers HTTP questions about game servers with JSON, asking
// the servers in their own query protocols (modules in the gamegate.query
// namespace: gqp, freeciv, …):
//
//	GET  /{server}                  the server's normalised status
//	GET  /{server}/{command}?arg=…  one protocol command's answer
//	POST /                          a batch of servers × commands
//
// Paths are taken as they reach the handler: mount it with handle_path to
// strip a prefix. Results are cached per server and command: concurrent
// requests share one upstream query, stale results are served while one
// refresh runs or when a server fails, failures are cached briefly, and the
// upstream query rate per server is limited.
type GameQuery struct {
	// Game servers by name (Caddyfile: one server line each). Default:
	// none.
	Servers map[string]*GameQueryServer `json:"servers,omitempty"`
	// The protocol for targets given as host:port instead of a name (a
	// gamegate.query module). Such targets are allowed only inside
	// allow_targets. Default: none (only named servers).
	AdHocRaw json.RawMessage `json:"ad_hoc,omitempty" caddy:"namespace=gamegate.query inline_key=protocol"`
	// The gateway's options: allow_targets, ad_hoc_games, ttl,
	// default_ttl, stale_while_revalidate, stale_if_error, negative_ttl,
	// upstream_rate, upstream_burst, max_ad_hoc_queries,
	// max_ad_hoc_queries_per_network, ad_hoc_rate, ad_hoc_burst,
	// client_ipv6_prefix, query_timeout, max_entries, max_batch_queries,
	// batch_concurrency, max_body, max_batch_answer_size, batch_rate,
	// batch_burst, name.
	query.Options
	// Deprecated: the former name of upstream_rate, still read (with a
	// warning at provision).
	FormerRateLimit float64 `json:"rate_limit,omitempty"`
	// Deprecated: the former name of upstream_burst, still read (with a
	// warning at provision).
	FormerRateBurst int `json:"rate_burst,omitempty"`
	// Deprecated: the former name of max_ad_hoc_queries, still read (with
	// a warning at provision).
	FormerMaxAdHoc int `json:"max_ad_hoc,omitempty"`
	// Deprecated: the former name of max_ad_hoc_queries_per_network,
	// still read (with a warning at provision).
	FormerMaxAdHocPerNetwork int `json:"max_ad_hoc_per_network,omitempty"`
	// Deprecated: the former name of max_batch_queries, still read (with
	// a warning at provision).
	FormerMaxBatch int `json:"max_batch,omitempty"`
	// Deprecated: the former name of max_batch_answer_size, still read
	// (with a warning at provision).
	FormerMaxBatchAnswer int64 `json:"max_batch_answer,omitempty"`

	adHoc      query.Protocol
	adHocGames func(string) (query.AdHocGame, *query.Error)
	gateway    *query.Gateway
	listed     *GatewaySet
}

// GameQueryServer is one named game server.
type GameQueryServer struct {
	// The server's options: address, game, commands, region.
	query.ServerOptions
	// Its query protocol (a gamegate.query module) and the protocol's
	// options; with game, the game's protocol. Default: the game's
	// protocol, else gqp.
	ProtocolRaw json.RawMessage `json:"protocol,omitempty" caddy:"namespace=gamegate.query inline_key=protocol"`

	protocol     query.Protocol
	queryAddress string // Address, or with Game the address to query
}

// CaddyModule returns the Caddy module information.
func (*GameQuery) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.game_query",
		New: func() caddy.Module { return new(GameQuery) },
	}
}

// knownProtocols lists the registered query protocols, so that ones added
// by other plugins show too.
func knownProtocols() string {
	var names []string
	for _, m := range caddy.GetModules("gamegate.query") {
		names = append(names, m.ID.Name())
	}
	return strings.Join(names, ", ")
}

func loadProtocol(ctx caddy.Context, structPtr any, field string) (query.Protocol, error) {
	mod, err := ctx.LoadModule(structPtr, field)
	if err != nil {
		if strings.Contains(err.Error(), "unknown module") {
			return nil, fmt.Errorf("%w (known query protocols: %s)", err, knownProtocols())
		}
		return nil, err
	}
	if field == "AdHocRaw" {
		// Ad-hoc targets are the clients' choice: a credential given to
		// ad_hoc would be sent to any address in allow_targets a client
		// names, a game server it runs included.
		if m, ok := mod.(interface{ GivenSecrets() []string }); ok {
			if names := m.GivenSecrets(); len(names) > 0 {
				return nil, fmt.Errorf("%s: credentials are sent to the server asked, and ad-hoc targets are the clients' choice: give them to named servers only",
					strings.Join(names, ", "))
			}
		}
	}
	if m, ok := mod.(interface{ QueryProtocol() query.Protocol }); ok {
		return m.QueryProtocol(), nil // a QueryProtocolModule's
	}
	p, ok := mod.(query.Protocol)
	if !ok {
		return nil, fmt.Errorf("module %T is not a game query protocol", mod)
	}
	return p, nil
}

// Provision loads the protocol modules and builds the gateway.
func (h *GameQuery) Provision(ctx caddy.Context) error {
	logger := ctx.Logger()
	// The protocols first: whether a server's address may lack its port
	// is theirs to say.
	for name, s := range h.Servers {
		if s == nil {
			continue // Validate names it
		}
		if err := s.provision(ctx); err != nil {
			return fmt.Errorf("server %q: %w", name, err)
		}
	}
	if h.AdHocRaw != nil {
		p, err := loadProtocol(ctx, h, "AdHocRaw")
		if err != nil {
			return fmt.Errorf("ad_hoc: %w", err)
		}
		h.adHoc = p
	}
	if err := h.provisionAdHocGames(ctx); err != nil {
		return fmt.Errorf("ad_hoc_games: %w", err)
	}
	if err := caddyglue.Renamed(ctx, "game_query", "rate_limit", "upstream_rate", &h.FormerRateLimit, &h.UpstreamRate); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "game_query", "rate_burst", "upstream_burst", &h.FormerRateBurst, &h.UpstreamBurst); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "game_query", "max_ad_hoc", "max_ad_hoc_queries", &h.FormerMaxAdHoc, &h.MaxAdHoc); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "game_query", "max_ad_hoc_per_network", "max_ad_hoc_queries_per_network", &h.FormerMaxAdHocPerNetwork, &h.MaxAdHocPerNetwork); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "game_query", "max_batch", "max_batch_queries", &h.FormerMaxBatch, &h.MaxBatch); err != nil {
		return err
	}
	if err := caddyglue.Renamed(ctx, "game_query", "max_batch_answer", "max_batch_answer_size", &h.FormerMaxBatchAnswer, &h.MaxBatchAnswer); err != nil {
		return err
	}
	cfg := h.config()
	cfg.OnUpstream = GameQueryMetrics.upstreamOf(h.Servers, h.adHoc != nil)
	cfg.ClientIP = caddyglue.ClientIP
	cfg.Log = func(server string, err error) {
		if ce := logger.Check(zap.WarnLevel, "game query failed"); ce != nil {
			ce.Write(zap.String("server", server), zap.Error(err))
		}
	}
	gw, err := query.NewGateway(cfg)
	if err != nil {
		return err
	}
	h.gateway = gw
	h.Name = cfg.WithDefaults().Name // the server lists' and Cleanup's
	if h.listed, err = LoadGateways(h.Name); err != nil {
		return err
	}
	h.listed.add(gw)
	return GameQueryMetrics.Register(ctx.GetMetricsRegistry())
}

// provision loads the server's protocol (its game's, when it names one)
// and finds the address to query.
func (s *GameQueryServer) provision(ctx caddy.Context) error {
	var g games.Game
	if s.Game != "" {
		var err error
		if g, err = gameProtocol(s.Game); err != nil {
			return err
		}
		if s.ProtocolRaw == nil {
			s.ProtocolRaw = caddyconfig.JSON(map[string]string{"protocol": g.GamegateProtocol}, nil)
		} else {
			var named struct{ Protocol string }
			_ = json.Unmarshal(s.ProtocolRaw, &named)
			if named.Protocol != g.GamegateProtocol {
				return fmt.Errorf("the game %q is queried with the protocol %s, not %q", s.Game, g.GamegateProtocol, named.Protocol)
			}
		}
	}
	if s.ProtocolRaw == nil {
		s.ProtocolRaw = json.RawMessage(`{"protocol":"gqp"}`)
	}
	p, err := loadProtocol(ctx, s, "ProtocolRaw")
	if err != nil {
		return err
	}
	s.protocol, s.queryAddress = p, s.Address
	if s.Game != "" {
		if s.queryAddress, err = gameAddress(g, p, s.Address); err != nil {
			return fmt.Errorf("address of the game %q: %w", s.Game, err)
		}
	}
	return nil
}

// provisionAdHocGames loads the protocols of the games ad_hoc_games
// allows: each protocol once, ad_hoc's own when it is the same.
func (h *GameQuery) provisionAdHocGames(ctx caddy.Context) error {
	if len(h.AdHocGames) == 0 {
		return nil
	}
	if err := validateAdHocGames(h.AdHocGames); err != nil {
		return err
	}
	var allowed map[string]bool
	need := make(map[string]bool)
	if h.AdHocGames[0] == "*" {
		for _, g := range games.Default().Games() {
			if queryProtocolRegistered(g.GamegateProtocol) {
				need[g.GamegateProtocol] = true
			}
		}
	} else {
		allowed = make(map[string]bool, len(h.AdHocGames))
		for _, id := range h.AdHocGames {
			g, _ := games.Default().Lookup(id)
			allowed[g.ID], need[g.GamegateProtocol] = true, true
		}
	}
	protocols := make(map[string]query.Protocol, len(need))
	for _, name := range sortedKeys(need) {
		if h.adHoc != nil && h.adHoc.Name() == name {
			protocols[name] = h.adHoc
			continue
		}
		mod, err := ctx.LoadModuleByID("gamegate.query."+name, json.RawMessage("{}"))
		if err != nil && allowed == nil {
			// Every game: a protocol that cannot run on its defaults
			// (one that needs credentials) leaves its games out.
			ctx.Logger().Warn("ad_hoc_games: a query protocol needs settings of its own; its games cannot be asked ad hoc",
				zap.String("protocol", name), zap.Error(err))
			continue
		}
		if err != nil {
			return fmt.Errorf("protocol %s: %w", name, err)
		}
		p, ok := mod.(query.Protocol)
		if !ok {
			return fmt.Errorf("module %T is not a game query protocol", mod)
		}
		protocols[name] = p
	}
	h.adHocGames = adHocGames(allowed, protocols)
	return nil
}

// validateAdHocGames checks ad_hoc_games: "*" alone, or games this build
// can query.
func validateAdHocGames(ids []string) error {
	for _, id := range ids {
		if id == "*" {
			if len(ids) > 1 {
				return errors.New(`"*" (every game) stands alone`)
			}
			continue
		}
		if _, err := gameProtocol(id); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup takes the servers off the lists and ends the queries running.
func (h *GameQuery) Cleanup() error {
	if h.gateway != nil {
		h.gateway.Close()
	}
	if h.listed != nil {
		h.listed.remove(h.gateway)
		err := ReleaseGateways(h.Name)
		return err
	}
	return nil
}

// config is the gateway's configuration as given: the gateway fills in
// the defaults.
func (h *GameQuery) config() query.Config {
	cfg := query.Config{
		Servers: make(map[string]query.Server, len(h.Servers)),
		AdHoc:   h.adHoc,
		Games:   h.adHocGames,
		Options: h.Options,
	}
	for name, s := range h.Servers {
		if s != nil {
			addr := s.queryAddress
			if addr == "" { // not provisioned: Validate checks the address as given
				addr = s.Address
			}
			cfg.Servers[name] = s.Server(name, addr, s.protocol)
		}
	}
	return cfg
}

// Validate checks the configuration: what JSON alone can get wrong here,
// then the gateway's options (query.Config.Validate).
func (h *GameQuery) Validate() error {
	for name, s := range h.Servers {
		if s == nil {
			return fmt.Errorf("server %q: needs an address", name)
		}
	}
	if err := validateAdHocGames(h.AdHocGames); err != nil {
		return fmt.Errorf("ad_hoc_games: %w", err)
	}
	return h.config().Validate()
}

// gatewayRange is the range the gateway's Config holds option opt to.
func gatewayRange(opt string) caddyglue.IntRange {
	return caddyglue.ConfigRange[query.Config](opt)
}

// gatewayDurationRange is gatewayRange for a duration option.
func gatewayDurationRange(opt string) caddyglue.DurationRange {
	return caddyglue.ConfigDurationRange[query.Config](opt)
}

// ServeHTTP answers game queries.
func (h *GameQuery) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	GameQueryMetrics.requests.Count(h.gateway.ServeHTTP(w, r, r.URL.Path))
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	game_query {
//		server <name> <host[:port]> [<protocol>|<game-id> [{
//			<protocol options>
//		}]]
//		ad_hoc <protocol> [{
//			<protocol options>
//		}]
//		ad_hoc_games                   <game-id>...|*
//		allow_targets                  <cidr|ip> ...
//		ttl                            <command> <duration>
//		default_ttl                    <duration>
//		stale_while_revalidate         <duration>
//		stale_if_error                 <duration>
//		negative_ttl                   <duration>
//		upstream_rate                  <queries_per_second>
//		upstream_burst                 <queries>
//		commands                       <server> <command> ...
//		max_ad_hoc_queries             <count>
//		max_ad_hoc_queries_per_network <count>
//		ad_hoc_rate                    <requests_per_second>
//		ad_hoc_burst                   <requests>
//		client_ipv6_prefix             <bits>
//		query_timeout                  <duration>
//		max_entries                    <count>
//		max_batch_queries              <count>
//		batch_concurrency              <count>
//		max_body                       <bytes>
//		max_batch_answer_size          <bytes>
//		batch_rate                     <batches_per_second>
//		batch_burst                    <batches>
//		region                         <server> <region>
//		name                           <name>
//	}
//
// A server's protocol defaults to gqp; server, ttl, commands and region
// may repeat (commands and region once per server, after its server
// line). A server's third token is a query protocol when a
// gamegate.query module has that name (as it always was), else a GameDig
// game ID, else a GameDig v4 ID; a game's options block is its
// protocol's.
func (h *GameQuery) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseRenamedModuleBlock(d, "", []string{"server", "ttl", "commands", "region"}, gameQueryFormerNames, func(opt string) error {
		var err error
		switch opt {
		case "server":
			err = h.parseServer(d)
		case "ad_hoc":
			if !d.NextArg() {
				return d.ArgErr()
			}
			h.AdHocRaw, _, err = unmarshalProtocol(d)
		case "ad_hoc_games":
			if h.AdHocGames, err = caddyglue.ParseArgs(d); err != nil {
				return err
			}
			if err := validateAdHocGames(h.AdHocGames); err != nil {
				return d.Errf("ad_hoc_games: %v", err)
			}
		case "allow_targets":
			h.AllowTargets, err = caddyglue.ParseArgs(d)
			for _, a := range h.AllowTargets {
				if _, perr := caddyglue.ParsePrefix(a); perr != nil {
					return d.Errf("allow_targets: '%s' is not a CIDR or IP address", a)
				}
			}
		case "ttl":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("ttl takes <command> <duration>")
			}
			dur, perr := caddy.ParseDuration(args[1])
			ttlRange := gatewayDurationRange("default_ttl") // every TTL's
			if perr != nil || dur <= 0 || !ttlRange.Contains(caddy.Duration(dur)) {
				return d.Errf("ttl %s: '%s' is not a positive duration up to %s", args[0], args[1], caddyglue.FmtDuration(caddy.Duration(ttlRange.Hi)))
			}
			if h.TTL == nil {
				h.TTL = make(map[string]duration.Duration)
			}
			if _, dup := h.TTL[args[0]]; dup {
				return d.Errf("duplicate ttl for '%s'", args[0])
			}
			h.TTL[args[0]] = duration.Duration(dur)
		case "default_ttl":
			h.DefaultTTL, err = caddyglue.ParseConfigDurationIn(d, gatewayDurationRange(opt))
		case "stale_while_revalidate":
			h.StaleWhileRevalidate, err = caddyglue.ParseConfigDurationIn(d, gatewayDurationRange(opt))
		case "stale_if_error":
			h.StaleIfError, err = caddyglue.ParseConfigDurationIn(d, gatewayDurationRange(opt))
		case "negative_ttl":
			h.NegativeTTL, err = caddyglue.ParseConfigDurationIn(d, gatewayDurationRange(opt))
		case "upstream_rate":
			if d.Val() == "rate_limit" { // its former form: rate_limit <rate> [<burst>]
				return h.parseRateLimit(d)
			}
			h.UpstreamRate, err = caddyglue.ParsePositiveFloat(d)
		case "upstream_burst":
			if h.UpstreamBurst != 0 {
				return d.Errf("%v", caddyglue.BothNames("rate_limit's burst", "upstream_burst"))
			}
			h.UpstreamBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		case "commands":
			args := d.RemainingArgs()
			if len(args) < 2 {
				return d.Errf("commands takes <server> <command> ...")
			}
			s, ok := h.Servers[args[0]]
			switch {
			case !ok:
				return d.Errf("commands: no server '%s' above", args[0])
			case s.Commands != nil:
				return d.Errf("duplicate commands for '%s'", args[0])
			}
			s.Commands = args[1:]
		case "region":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("region takes <server> <region>")
			}
			s, ok := h.Servers[args[0]]
			switch {
			case !ok:
				return d.Errf("region: no server '%s' above", args[0])
			case s.Region != "":
				return d.Errf("duplicate region for '%s'", args[0])
			}
			if err := query.ValidateRegion(args[1]); err != nil {
				return d.Errf("region %s: %v", args[0], err)
			}
			s.Region = args[1]
		case "name":
			h.Name, err = caddyglue.ParseSingleArg(d)
		case "max_ad_hoc_queries":
			h.MaxAdHoc, err = caddyglue.ParseIntIn(d, gatewayRange(opt))
		case "max_ad_hoc_queries_per_network":
			h.MaxAdHocPerNetwork, err = caddyglue.ParseIntIn(d, gatewayRange(opt))
		case "ad_hoc_rate":
			h.AdHocRate, err = caddyglue.ParsePositiveFloat(d)
		case "ad_hoc_burst":
			h.AdHocBurst, err = caddyglue.ParseIntIn(d, gatewayRange(opt))
		case "client_ipv6_prefix":
			h.ClientIPv6Prefix, err = caddyglue.ParseIntIn(d, caddyglue.ClientIPv6PrefixRange)
		case "query_timeout":
			h.QueryTimeout, err = caddyglue.ParseConfigDurationIn(d, gatewayDurationRange(opt))
		case "max_entries":
			h.MaxEntries, err = caddyglue.ParseIntIn(d, gatewayRange(opt))
		case "max_batch_queries":
			h.MaxBatch, err = caddyglue.ParseIntIn(d, gatewayRange(opt))
		case "batch_concurrency":
			h.BatchConcurrency, err = caddyglue.ParseIntIn(d, gatewayRange(opt))
		case "max_body":
			h.MaxBody, err = caddyglue.ParseSize[int64](d, gatewayRange(opt))
		case "max_batch_answer_size":
			h.MaxBatchAnswer, err = caddyglue.ParseSize[int64](d, gatewayRange(opt))
		case "batch_rate":
			h.BatchRate, err = caddyglue.ParsePositiveFloat(d)
		case "batch_burst":
			h.BatchBurst, err = caddyglue.ParseIntIn(d, caddyglue.BurstRange)
		default:
			return caddyglue.UnknownOption(d, "", opt)
		}
		return err
	})
}

// gameQueryFormerNames are the game query handler's renamed options.
var gameQueryFormerNames = caddyglue.FormerNames{
	"rate_limit":             "upstream_rate",
	"rate_burst":             "upstream_burst",
	"max_ad_hoc":             "max_ad_hoc_queries",
	"max_ad_hoc_per_network": "max_ad_hoc_queries_per_network",
	"max_batch":              "max_batch_queries",
	"max_batch_answer":       "max_batch_answer_size",
}

// parseRateLimit parses upstream_rate's former form, rate_limit <rate>
// [<burst>].
func (h *GameQuery) parseRateLimit(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return d.Errf("rate_limit takes <queries_per_second> [<burst>]")
	}
	f, err := strconv.ParseFloat(args[0], 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return d.Errf("rate_limit: '%s' is not a positive number", args[0])
	}
	h.UpstreamRate = f
	if len(args) == 2 {
		b, err := strconv.Atoi(args[1])
		if err != nil || !caddyglue.BurstRange.Contains(int64(b)) {
			return d.Errf("rate_limit burst: '%s' is not an integer in [%d, %d]", args[1], caddyglue.BurstRange.Lo, caddyglue.BurstRange.Hi)
		}
		if h.UpstreamBurst != 0 {
			return d.Errf("%v", caddyglue.BothNames("rate_limit's burst", "upstream_burst"))
		}
		h.UpstreamBurst = b
	}
	return nil
}

func (h *GameQuery) parseServer(d *caddyfile.Dispenser) error {
	args := []string{}
	for len(args) < 2 && d.NextArg() {
		args = append(args, d.Val())
	}
	if len(args) != 2 {
		return d.Errf("server takes <name> <host:port> [<protocol>|<game-id>]")
	}
	name, addr := args[0], args[1]
	_, _, addrErr := netaddr.SplitHostPort(addr)
	if _, dup := h.Servers[name]; dup {
		return d.Errf("duplicate server '%s'", name)
	}
	s := &GameQueryServer{ServerOptions: query.ServerOptions{Address: addr}}
	var protocol query.Protocol
	if d.NextArg() {
		var err error
		if protocol, err = s.parseProtocolOrGame(d, name); err != nil {
			return err
		}
	} else if d.NextBlock(d.Nesting()) {
		return d.Errf("server '%s': name the protocol before its options", name)
	}
	if addrErr != nil && !query.FindsPort(protocol, addr) {
		g, isGame := games.Default().Lookup(s.Game)
		_, port, err := netaddr.SplitHostOptionalPort(addr)
		switch {
		case isGame && err == nil && port == 0 && !hasDefaultPort(g):
			return d.Errf("server '%s': the game '%s' has no default port: give '%s' a port", name, s.Game, addr)
		case !isGame || err != nil:
			return d.Errf("server '%s': '%s' is not host:port", name, addr)
		}
	}
	if h.Servers == nil {
		h.Servers = make(map[string]*GameQueryServer)
	}
	h.Servers[name] = s
	return nil
}

// parseProtocolOrGame parses the server's protocol, or its game, from the
// current token and the block after it: a registered protocol's name is
// that protocol, as it always was; else a game ID or v4 ID is that game,
// queried with its protocol, whose options the block holds.
func (s *GameQueryServer) parseProtocolOrGame(d *caddyfile.Dispenser, server string) (query.Protocol, error) {
	token := d.Val()
	if queryProtocolRegistered(token) {
		raw, p, err := unmarshalProtocol(d)
		s.ProtocolRaw = raw
		return p, err
	}
	if _, known := games.Default().Lookup(token); !known {
		return nil, d.Errf("unknown query protocol '%s' (known: %s), and no game has that ID (gamegate games lists them)", token, knownProtocols())
	}
	g, err := gameProtocol(token)
	if err != nil {
		return nil, d.Errf("server '%s': %v", server, err)
	}
	unm, err := caddyfile.UnmarshalModule(d, "gamegate.query."+g.GamegateProtocol)
	if err != nil {
		return nil, err
	}
	p, ok := unm.(query.Protocol)
	if !ok {
		return nil, d.Errf("module '%s' is not a game query protocol", g.GamegateProtocol)
	}
	s.Game = token
	// The protocol's options, if any were given.
	if raw := caddyconfig.JSONModuleObject(unm, "protocol", g.GamegateProtocol, nil); string(raw) != `{"protocol":"`+g.GamegateProtocol+`"}` {
		s.ProtocolRaw = raw
	}
	return p, nil
}

// hasDefaultPort reports whether a server of g may be given without a
// port.
func hasDefaultPort(g games.Game) bool {
	_, err := g.QueryPortFor(0)
	return err == nil
}

// unmarshalProtocol parses a protocol module from the current token (its
// name) and the block after it, and returns its JSON and the module, not
// yet provisioned.
func unmarshalProtocol(d *caddyfile.Dispenser) (json.RawMessage, query.Protocol, error) {
	name := d.Val()
	if _, err := caddy.GetModule("gamegate.query." + name); err != nil {
		return nil, nil, d.Errf("unknown query protocol '%s' (known: %s)", name, knownProtocols())
	}
	unm, err := caddyfile.UnmarshalModule(d, "gamegate.query."+name)
	if err != nil {
		return nil, nil, err
	}
	p, ok := unm.(query.Protocol)
	if !ok {
		return nil, nil, d.Errf("module '%s' is not a game query protocol", name)
	}
	return caddyconfig.JSONModuleObject(unm, "protocol", name, nil), p, nil
}

func parseGameQueryDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(GameQuery)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

var GameQueryMetrics = newGameQueryMetrics()

type gameQueryMetricSet struct {
	caddyglue.MetricSet
	requests caddyglue.CodeCounters
	upstream *prometheus.CounterVec   // by server
	duration *prometheus.HistogramVec // by server
}

// adHocServer is the server label of every ad-hoc target: labels come from
// the configuration, never from what clients ask.
const adHocServer = "ad_hoc"

func newGameQueryMetrics() *gameQueryMetricSet {
	m := &gameQueryMetricSet{MetricSet: caddyglue.MetricSet{Subsystem: "game_query"}}
	m.requests = m.CodeCounters("requests_total", "Game query HTTP requests answered, by status code.",
		200, 304, 400, 403, 404, 429, 502, 503, 504)
	m.upstream = m.CounterVec("upstream_queries_total",
		"Queries sent to game servers (after caching and coalescing), by configured server name (ad_hoc for ad-hoc targets).", "server")
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "gamegate", Subsystem: "game_query",
		Name:    "upstream_query_duration_seconds",
		Help:    "How long queries to game servers took, answered or not, in seconds, by configured server name (ad_hoc for ad-hoc targets).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"server"})
	m.Collectors = append(m.Collectors, m.duration)
	return m
}

// upstreamOf returns the gateway's OnUpstream for servers: each configured
// server's observer is looked up once, and ad-hoc targets, if
// adHocTargets, share one.
func (m *gameQueryMetricSet) upstreamOf(servers map[string]*GameQueryServer, adHocTargets bool) func(string, time.Duration) {
	type serverMetrics struct {
		queries  prometheus.Counter
		duration prometheus.Observer
	}
	of := func(name string) serverMetrics {
		return serverMetrics{m.upstream.WithLabelValues(name), m.duration.WithLabelValues(name)}
	}
	by := make(map[string]serverMetrics, len(servers))
	for name := range servers {
		by[name] = of(name)
	}
	// Made when ad-hoc targets are configured: a configuration that takes
	// none has no ad_hoc series.
	adHoc := sync.OnceValue(func() serverMetrics { return of(adHocServer) })
	if adHocTargets {
		adHoc()
	}
	return func(server string, took time.Duration) {
		s, ok := by[server]
		if !ok {
			s = adHoc()
		}
		s.queries.Inc()
		s.duration.Observe(took.Seconds())
	}
}

// Interface guards
var (
	_ caddy.Provisioner           = (*GameQuery)(nil)
	_ caddy.CleanerUpper          = (*GameQuery)(nil)
	_ caddy.Validator             = (*GameQuery)(nil)
	_ caddyfile.Unmarshaler       = (*GameQuery)(nil)
	_ caddyhttp.MiddlewareHandler = (*GameQuery)(nil)
)
