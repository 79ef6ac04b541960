package caddymaster

import (
	"errors"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/caddymodule/caddyquery"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/handlers/serverlist"
)

func init() {
	caddy.RegisterModule(new(ServerList))
	httpcaddyfile.RegisterHandlerDirective("server_list", parseServerListDirective)
	httpcaddyfile.RegisterDirectiveOrder("server_list", httpcaddyfile.Before, "respond")
}

// ServerList answers GET with the game servers registered with a master
// (the gamegate app's master protocol) and those game_query handlers are
// configured with, each with its live status in the game query result
// shape, filtered (game, map, region, not_empty, not_full, no_password),
// sorted and paged, with an ETag. It answers at any path, so it works
// under a path prefix (handle_path /servers/*).
type ServerList struct {
	// The name of the master whose servers are listed. Default: master.
	Master string `json:"master,omitempty"`
	// The name of the game_query handlers whose servers are listed too,
	// with their statuses from those handlers' caches. Default:
	// game_query.
	GameQuery string `json:"game_query,omitempty"`
	// How long a server's queried status is reused, and then served
	// stale while one refresh runs. Default: 10s.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// Time allowed for one status query, retries included. Default: 3s.
	QueryTimeout caddy.Duration `json:"query_timeout,omitempty"`
	// Status queries running at once; a server whose status is not
	// cached yet is listed from its last infoResponse meanwhile. Default:
	// 16.
	MaxQueries int `json:"max_queries,omitempty"`
	listSizes

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

func (h *ServerList) config() serverlist.Config {
	return h.listSizes.config(serverlist.Config{TTL: time.Duration(h.TTL), QueryTimeout: time.Duration(h.QueryTimeout), MaxQueries: h.MaxQueries})
}

// listSizes are the bounds of a list's answers in bytes, options of
// server_list and server_browser.
type listSizes struct {
	// The most bytes of a server's entry in a page (its status as JSON),
	// and of the status kept for it, from 2KiB to 1MiB: a larger status
	// is cut (players, bots and raw variables past it left out) and
	// marked "truncated": true. Default: 8KiB.
	MaxStatusSize int `json:"max_status_size,omitempty"`
	// The most bytes of one answer of the list, from 16KiB to 64MiB and
	// at least max_status_size and 1KiB: a page ends before the server
	// that would pass it and is marked "truncated": true. Default: 1MiB.
	MaxPageSize int `json:"max_page_size,omitempty"`
}

// config returns cfg with the sizes.
func (s listSizes) config(cfg serverlist.Config) serverlist.Config {
	cfg.MaxStatusSize, cfg.MaxPageSize = s.MaxStatusSize, s.MaxPageSize
	return cfg
}

// parse reads the option opt if it is one of the sizes, and reports
// whether it was.
func (s *listSizes) parse(d *caddyfile.Dispenser, opt string) (bool, error) {
	var err error
	switch opt {
	case "max_status_size":
		s.MaxStatusSize, err = caddyglue.ParseSize[int](d, caddyglue.ConfigRange[serverlist.Config](opt))
	case "max_page_size":
		s.MaxPageSize, err = caddyglue.ParseSize[int](d, caddyglue.ConfigRange[serverlist.Config](opt))
	default:
		return false, nil
	}
	return true, err
}

// Provision shares the named master's list and its servers' statuses,
// and the named game_query handlers' servers (either may be configured
// before or after this handler), and builds the handler.
func (h *ServerList) Provision(ctx caddy.Context) error {
	if h.Master == "" {
		h.Master = master.DefaultName
	}
	if h.GameQuery == "" {
		h.GameQuery = query.DefaultName
	}
	var err error
	h.list, err = h.held.open(ctx, h.Master, h.GameQuery, h.config())
	return err
}

// masterList is what a list holds of the pools: a master's registry and
// statuses, and a set of game_query gateways.
type masterList struct {
	master, gameQuery string // the pool keys held
}

// open builds a list of the servers of the master named masterName
// (shared through the storage as the master's is) and of the game_query
// handlers named gameQueryName, taking both from their pools; release
// gives them back (also after an error).
func (m *masterList) open(ctx caddy.Context, masterName, gameQueryName string, cfg serverlist.Config) (*serverlist.List, error) {
	reg, err := loadMasterRegistry(masterName)
	if err != nil {
		return nil, err
	}
	m.master = masterName
	// A node may serve the list without the master: it reads the
	// servers the others register.
	if err := reg.share(ctx, masterName); err != nil {
		return nil, err
	}
	gateways, err := caddyquery.LoadGateways(gameQueryName)
	if err != nil {
		return nil, err
	}
	m.gameQuery = gameQueryName
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
func (h *ServerList) Validate() error { return h.config().Validate() }

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
func (h *ServerList) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// Caddy starts the errors with the directive's name.
	return caddyglue.ParseModuleBlock(d, "", nil, func(opt string) error {
		var err error
		switch opt {
		case "master":
			h.Master, err = caddyglue.ParseSingleArg(d)
		case "game_query":
			h.GameQuery, err = caddyglue.ParseSingleArg(d)
		case "ttl":
			h.TTL, err = caddyglue.ParseDuration(d)
		case "query_timeout":
			h.QueryTimeout, err = caddyglue.ParseDuration(d)
		case "max_queries":
			h.MaxQueries, err = caddyglue.ParseIntIn(d, caddyglue.PositiveRange)
		default:
			var size bool
			if size, err = h.listSizes.parse(d, opt); !size {
				return caddyglue.UnknownOption(d, "", opt)
			}
		}
		if err == nil {
			if verr := h.Validate(); verr != nil {
				return d.Errf("%v", verr)
			}
		}
		return err
	})
}

func parseServerListDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(ServerList)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ServerList)(nil)
	_ caddy.Validator             = (*ServerList)(nil)
	_ caddy.CleanerUpper          = (*ServerList)(nil)
	_ caddyhttp.MiddlewareHandler = (*ServerList)(nil)
	_ caddyfile.Unmarshaler       = (*ServerList)(nil)
)
