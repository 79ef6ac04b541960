package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

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
	return []caddy.AdminRoute{{Pattern: "/qos-discovery/", Handler: caddy.AdminHandlerFunc(a.serve)}}
}

func apiError(status int, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return caddy.APIError{HTTPStatus: status, Err: err, Message: err.Error()}
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
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/qos-discovery/"), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[1] != "fleets" {
		return apiError(http.StatusNotFound, "want /qos-discovery/{name}/fleets[/{fleet_id}]")
	}
	o := findOverrides(parts[0])
	if o == nil {
		return apiError(http.StatusNotFound, "no qos_discovery handler named %q is configured", parts[0])
	}
	if len(parts) == 2 || parts[2] == "" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			return apiError(http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
		}
		return writeAdminJSON(w, overridesJSON(o))
	}
	fleet := parts[2]
	switch r.Method {
	case http.MethodGet:
		list, ok := o.Get(fleet)
		if !ok {
			return apiError(http.StatusNotFound, "fleet %q has no override", fleet)
		}
		return writeAdminJSON(w, map[string]any{"servers": serversJSON(list)})
	case http.MethodPut, http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, discovery.MaxServersPayload+1))
		if err != nil {
			return apiError(http.StatusBadRequest, "reading body: %v", err)
		}
		servers, err := discovery.ParseServers(body)
		if err != nil {
			return apiError(http.StatusBadRequest, "fleet %q: %v", fleet, err)
		}
		if err := o.Set(fleet, servers); err != nil {
			return apiError(http.StatusBadRequest, "%v", err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	case http.MethodDelete:
		if !o.Delete(fleet) {
			return apiError(http.StatusNotFound, "fleet %q has no override", fleet)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Allow", "GET, PUT, POST, DELETE")
	return apiError(http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
}

func serversJSON(list []discovery.Server) []DiscoveryServer {
	out := make([]DiscoveryServer, len(list))
	for i, s := range list {
		out[i] = DiscoveryServer(s)
	}
	return out
}

func overridesJSON(o *discovery.Overrides) map[string]any {
	fleets := map[string]any{}
	ids := o.IDs()
	sort.Strings(ids)
	for _, id := range ids {
		if list, ok := o.Get(id); ok {
			fleets[id] = map[string]any{"servers": serversJSON(list)}
		}
	}
	return map[string]any{"fleets": fleets}
}

func writeAdminJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// Interface guards
var _ caddy.AdminRouter = (*DiscoveryAdmin)(nil)
