package caddymaster

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/caddymodule/caddyglue"
	"github.com/gamegate/gamegate/handlers/master"
	"github.com/gamegate/gamegate/handlers/query"
	"github.com/gamegate/gamegate/handlers/serverbrowser"
	"github.com/gamegate/gamegate/handlers/serverlist"
)

func init() {
	caddy.RegisterModule(new(ServerBrowser))
	httpcaddyfile.RegisterHandlerDirective("server_browser", parseServerBrowserDirective)
	httpcaddyfile.RegisterDirectiveOrder("server_browser", httpcaddyfile.Before, "respond")
}

// ServerBrowser serves a server-browser page for the game servers
// registered with a master and configured in game_query handlers (the
// servers server_list lists, from the same statuses): sortable, filterable, refreshing, with each
// server's player count over the last day and an SVG status badge per
// server (badge/<address>.svg). The page is self-contained (it fetches
// nothing from elsewhere) and reads the list from servers.json beside it.
// Mount it under a path prefix (handle_path /browser/*).
type ServerBrowser struct {
	// The name of the master whose servers are listed. Default: master.
	Master string `json:"master,omitempty"`
	// The name of the game_query handlers whose servers are listed too.
	// Default: game_query.
	GameQuery string `json:"game_query,omitempty"`
	// The page's title. Default: Game servers.
	Title string `json:"title,omitempty"`
	// How often the page fetches the list again, from 1s to 1h.
	// Default: 30s.
	Refresh caddy.Duration `json:"refresh,omitempty"`
	// The time each server's player-count chart spans, from 1m to 168h.
	// Default: 24h.
	History caddy.Duration `json:"history,omitempty"`
	// The number of points (buckets) of the chart, each the peak of its
	// share of history, from 2 to 1440. Default: 96.
	HistorySamples int `json:"history_samples,omitempty"`
	// The servers whose history is kept; a server beyond it is listed
	// without a chart until one silent for the whole history is
	// forgotten. Default: 1024.
	MaxHistoryServers int `json:"max_history_servers,omitempty"`
	// max_status_size and max_page_size bound servers.json's answers as
	// server_list's.
	listSizes

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

func (h *ServerBrowser) config() serverbrowser.Config {
	return serverbrowser.Config{Title: h.Title, Refresh: time.Duration(h.Refresh), History: time.Duration(h.History),
		HistorySamples: h.HistorySamples, MaxHistoryServers: h.MaxHistoryServers}
}

// Provision shares the named master's list, as server_list does, and
// starts sampling its player counts.
func (h *ServerBrowser) Provision(ctx caddy.Context) error {
	if h.Master == "" {
		h.Master = master.DefaultName
	}
	if h.GameQuery == "" {
		h.GameQuery = query.DefaultName
	}
	var err error
	if h.list, err = h.held.open(ctx, h.Master, h.GameQuery, h.listSizes.config(serverlist.Config{})); err != nil {
		return err
	}
	cfg := h.config()
	cfg.List = h.list
	h.browser, err = serverbrowser.New(cfg)
	return err
}

// Validate checks the options' ranges.
func (h *ServerBrowser) Validate() error {
	if err := h.config().Validate(); err != nil {
		return err
	}
	return h.listSizes.config(serverlist.Config{}).Validate()
}

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
func (h *ServerBrowser) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// Caddy starts the errors with the directive's name.
	return caddyglue.ParseModuleBlock(d, "", nil, func(opt string) error {
		var err error
		switch opt {
		case "master":
			h.Master, err = caddyglue.ParseSingleArg(d)
		case "game_query":
			h.GameQuery, err = caddyglue.ParseSingleArg(d)
		case "title":
			h.Title, err = caddyglue.ParseSingleArg(d)
		case "refresh":
			h.Refresh, err = caddyglue.ParseDuration(d)
		case "history":
			h.History, err = caddyglue.ParseDuration(d)
		case "history_samples":
			h.HistorySamples, err = caddyglue.ParseIntIn(d, caddyglue.ConfigRange[serverbrowser.Config](opt))
		case "max_history_servers":
			h.MaxHistoryServers, err = caddyglue.ParseIntIn(d, caddyglue.ConfigRange[serverbrowser.Config](opt))
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

func parseServerBrowserDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(ServerBrowser)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// Interface guards
var (
	_ caddy.Provisioner           = (*ServerBrowser)(nil)
	_ caddy.Validator             = (*ServerBrowser)(nil)
	_ caddy.CleanerUpper          = (*ServerBrowser)(nil)
	_ caddyhttp.MiddlewareHandler = (*ServerBrowser)(nil)
	_ caddyfile.Unmarshaler       = (*ServerBrowser)(nil)
)
