package caddydiscovery

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/handlers/discovery"
)

func init() {
	caddy.RegisterModule(new(DiscoveryAdmin))
}

// DiscoveryAdmin lets an orchestrator replace a fleet's QoS server list at
// run time through Caddy's admin API:
//
//	GET    /qos-discovery/{name}/fleets             the overrides, by fleet
//	GET    /qos-discovery/{name}/fleets/{fleet_id}  one fleet's override
//	PUT    /qos-discovery/{name}/fleets/{fleet_id}  replace it: {"servers": [...]}
//	DELETE /qos-discovery/{name}/fleets/{fleet_id}  drop it (the file or inline list applies again)
//
// {name} is the qos_discovery handler's name ("default" unless set). An
// override takes precedence over the fleets file and inline fleets, changes
// the fleet's ETag if its content changed, and survives configuration
// reloads (not restarts: keep lists that must survive restarts in the
// fleets file).
type DiscoveryAdmin struct{}

// CaddyModule returns the Caddy module information.
func (*DiscoveryAdmin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.qos_discovery",
		New: func() caddy.Module { return new(DiscoveryAdmin) },
	}
}

// Routes returns the admin routes.
func (a *DiscoveryAdmin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: discovery.AdminPrefix, Handler: caddy.AdminHandlerFunc(a.serve)}}
}

func findOverrides(name string) *discovery.Overrides {
	var found *discovery.Overrides
	discoveryOverrides.Range(func(k, v any) bool {
		if k == name {
			found = v.(pooledOverrides).Overrides
			return false
		}
		return true
	})
	return found
}

func (a *DiscoveryAdmin) serve(w http.ResponseWriter, r *http.Request) error {
	api := discovery.Admin{Find: findOverrides, Logger: caddy.Log().Named("admin.api.qos_discovery")}
	err := api.Serve(w, r)
	var ae *discovery.AdminError
	if errors.As(err, &ae) {
		return caddy.APIError{HTTPStatus: ae.Status, Err: ae, Message: ae.Message}
	}
	return err
}

// Interface guards
var _ caddy.AdminRouter = (*DiscoveryAdmin)(nil)
