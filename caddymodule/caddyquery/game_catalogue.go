package caddyquery

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/caddymodule/caddyglue"
)

func init() {
	caddy.RegisterModule(new(GameCatalogue))
	httpcaddyfile.RegisterHandlerDirective("game_catalogue", parseGameCatalogueDirective)
	httpcaddyfile.RegisterDirectiveOrder("game_catalogue", httpcaddyfile.Before, "respond")
}

// GameCatalogue answers every GET with the games gamegate knows by
// GameDig's IDs, as JSON: each game's ID, v4 IDs, name, GameDig's
// protocol, the gamegate protocol serving it, whether this build can
// query it, and its default ports, then the coverage. It is what
// `gamegate games --json` prints; mount it where the site wants it
// (handle /games).
type GameCatalogue struct {
	body         []byte
	etag, length string
}

// CaddyModule returns the Caddy module information.
func (*GameCatalogue) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.game_catalogue",
		New: func() caddy.Module { return new(GameCatalogue) },
	}
}

// Provision serialises the listing once: the registered protocols do
// not change while a configuration runs.
func (h *GameCatalogue) Provision(caddy.Context) error {
	b, err := json.Marshal(gameListing())
	if err != nil {
		return err
	}
	h.body, h.etag, h.length = b, cache.ETag(b, false), strconv.Itoa(len(b))
	return nil
}

// ServeHTTP answers GET and HEAD with the listing (304 to a matching
// If-None-Match), anything else with 405.
func (h *GameCatalogue) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return caddyhttp.Error(http.StatusMethodNotAllowed, nil)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Etag", h.etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && cache.IfNoneMatch(inm, h.etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	hdr.Set("Content-Length", h.length)
	if r.Method != http.MethodHead {
		_, _ = w.Write(h.body)
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	game_catalogue
//
// It takes no arguments and no options.
func (h *GameCatalogue) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyglue.ParseNoOptions(d, "game_catalogue")
}

func parseGameCatalogueDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(GameCatalogue)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// Interface guards
var (
	_ caddy.Provisioner           = (*GameCatalogue)(nil)
	_ caddyfile.Unmarshaler       = (*GameCatalogue)(nil)
	_ caddyhttp.MiddlewareHandler = (*GameCatalogue)(nil)
)
