package caddymaster

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/serverlist"
)

func init() {
	caddy.RegisterModule(new(ServerList))
	registerHandlerDirective[ServerList]("server_list")
}

// ServerList answers GET with the game servers registered with a master
// (the gamegate app's master protocol) and those game_query handlers are
// configured with, each with its live status in the game query result
// shape, filtered (game, map, region, not_empty, not_full, no_password),
// sorted and paged, with an ETag. It answers at any path, so it works
// under a path prefix (handle_path /servers/*).
type ServerList struct {
	// The list's options: master, game_query, ttl, query_timeout,
	// max_queries, max_status_size, max_page_size.
	serverlist.Config

	list *serverlist.List
	held masterList
}

// CaddyModule returns the Caddy module information.
func (*ServerList) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.server_list",
		New: func() caddy.Module { return new(ServerList) },
	}
}

// Provision shares the named master's list and its servers' statuses,
// and the named game_query handlers' servers (either may be configured
// before or after this handler), and builds the handler.
func (h *ServerList) Provision(ctx caddy.Context) error {
	var err error
	h.list, err = h.held.open(ctx, h.Config)
	return err
}

// masterList is what a list holds of the pools: a master's registry and
// statuses, and a set of game_query gateways.
type masterList struct {
	master, gameQuery string // the pool keys held
}

// open builds a list of cfg's source: the servers of the master it names
// (shared through the storage as the master's is) and of the game_query
// handlers it names, taking both from their pools; release gives them
// back (also after an error).
func (m *masterList) open(ctx caddy.Context, cfg serverlist.Config) (*serverlist.List, error) {
	source := cfg.Source.WithDefaults()
	reg, err := loadMasterRegistry(source.Master)
	if err != nil {
		return nil, err
	}
	m.master = source.Master
	// A node may serve the list without the master: it reads the
	// servers the others register.
	if err := reg.share(ctx, source.Master); err != nil {
		return nil, err
	}
	gateways, err := caddyquery.LoadGateways(source.GameQuery)
	if err != nil {
		return nil, err
	}
	m.gameQuery = source.GameQuery
	cfg.Registry, cfg.Statuses, cfg.Gateways = reg.Registry, reg.statuses, gateways.NewestFirst
	// The client as Caddy determined it (trusted_proxies), so that a
	// client behind a proxy is not shown the servers of the proxy's scope.
	cfg.ClientIP = caddyglue.ClientIP
	return serverlist.New(cfg)
}

// release gives back what open took.
func (m *masterList) release() error {
	var errs []error
	if m.master != "" {
		_, err := masterRegistries.Delete(m.master)
		errs = append(errs, err)
	}
	if m.gameQuery != "" {
		err := caddyquery.ReleaseGateways(m.gameQuery)
		errs = append(errs, err)
	}
	*m = masterList{}
	return errors.Join(errs...)
}

// Validate checks the options' ranges.
func (h *ServerList) Validate() error { return h.Config.Validate() }

// Cleanup stops starting status queries and releases the lists.
func (h *ServerList) Cleanup() error {
	if h.list != nil {
		h.list.Close()
	}
	return h.held.release()
}

// ServeHTTP answers with the list.
func (h *ServerList) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.list.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	server_list {
//		master          <name>
//		game_query      <name>
//		ttl             <duration>
//		query_timeout   <duration>
//		max_queries     <count>
//		max_status_size <size>
//		max_page_size   <size>
//	}
//
// The ranges are the list's (serverlist.Config.Validate), checked once the
// block is read.
func (h *ServerList) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// Caddy starts the errors with the directive's name.
	return parseConfigBlock(d, "", &h.Config, blockSyntax{})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ServerList)(nil)
	_ caddy.Validator             = (*ServerList)(nil)
	_ caddy.CleanerUpper          = (*ServerList)(nil)
	_ caddyhttp.MiddlewareHandler = (*ServerList)(nil)
	_ caddyfile.Unmarshaler       = (*ServerList)(nil)
)
