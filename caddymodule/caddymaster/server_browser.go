package caddymaster

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/handlers/serverbrowser"
	"github.com/gamegate/gamegate/handlers/serverlist"
)

func init() {
	caddy.RegisterModule(new(ServerBrowser))
	registerHandlerDirective[ServerBrowser]("server_browser")
}

// ServerBrowser serves a server-browser page for the game servers
// registered with a master and configured in game_query handlers (the
// servers server_list lists, from the same statuses): sortable, filterable, refreshing, with each
// server's player count over the last day and an SVG status badge per
// server (badge/<address>.svg). The page is self-contained (it fetches
// nothing from elsewhere) and reads the list from servers.json beside it.
// Mount it under a path prefix (handle_path /browser/*).
type ServerBrowser struct {
	// The page's options: master, game_query, title, refresh, history,
	// history_samples, max_history_servers, max_status_size,
	// max_page_size.
	serverbrowser.Config

	browser *serverbrowser.Browser
	list    *serverlist.List
	held    masterList
}

// CaddyModule returns the Caddy module information.
func (*ServerBrowser) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.server_browser",
		New: func() caddy.Module { return new(ServerBrowser) },
	}
}

// Provision shares the named master's list, as server_list does, and
// starts sampling its player counts.
func (h *ServerBrowser) Provision(ctx caddy.Context) error {
	var err error
	if h.list, err = h.held.open(ctx, h.ListConfig()); err != nil {
		return err
	}
	cfg := h.Config
	cfg.List = h.list
	h.browser, err = serverbrowser.New(cfg)
	return err
}

// Validate checks the options' ranges.
func (h *ServerBrowser) Validate() error { return h.Config.Validate() }

// Cleanup stops the sampling and the status queries and releases the
// master's list.
func (h *ServerBrowser) Cleanup() error {
	if h.browser != nil {
		h.browser.Close()
	}
	if h.list != nil {
		h.list.Close()
	}
	return h.held.release()
}

// ServeHTTP answers with the page, the list, the history or a badge.
func (h *ServerBrowser) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.browser.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	server_browser {
//		master              <name>
//		game_query          <name>
//		title               <text>
//		refresh             <duration>
//		history             <duration>
//		history_samples     <count>
//		max_history_servers <count>
//		max_status_size     <size>
//		max_page_size       <size>
//	}
//
// The ranges are the page's (serverbrowser.Config.Validate), checked once
// the block is read; history_samples and max_history_servers are read in
// them.
func (h *ServerBrowser) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// Caddy starts the errors with the directive's name.
	return parseConfigBlock(d, "", &h.Config, blockSyntax{inRange: []string{"history_samples", "max_history_servers"}})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ServerBrowser)(nil)
	_ caddy.Validator             = (*ServerBrowser)(nil)
	_ caddy.CleanerUpper          = (*ServerBrowser)(nil)
	_ caddyhttp.MiddlewareHandler = (*ServerBrowser)(nil)
	_ caddyfile.Unmarshaler       = (*ServerBrowser)(nil)
)
