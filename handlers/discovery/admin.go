package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// AdminPrefix is the path under which the admin API is served.
const AdminPrefix = "/qos-discovery/"

// AdminError is an admin API request that failed: the HTTP status and a
// message for the caller, which never holds internal error text.
type AdminError struct {
	Status  int
	Message string
}

func (e *AdminError) Error() string { return e.Message }

func adminError(status int, format string, args ...any) *AdminError {
	return &AdminError{Status: status, Message: fmt.Sprintf(format, args...)}
}

// Admin is the REST API through which an orchestrator replaces a fleet's
// QoS server list at run time:
//
//	GET    /qos-discovery/{name}/fleets             the overrides, by fleet
//	GET    /qos-discovery/{name}/fleets/{fleet_id}  one fleet's override
//	PUT    /qos-discovery/{name}/fleets/{fleet_id}  replace it: {"servers": [...]}
//	DELETE /qos-discovery/{name}/fleets/{fleet_id}  drop it (the file or inline list applies again)
//
// POST is taken as PUT.
type Admin struct {
	// Find returns the overrides of the discovery service named name, or
	// nil if none is configured.
	Find func(name string) *Overrides
	// Logger receives failures that callers are told of in words only.
	// Default: none.
	Logger *zap.Logger
}

// Serve answers an admin request. Successes are written to w; a failure is
// returned as an *AdminError for the caller to write in its admin API's
// error shape (an Allow header is already set on w for 405).
func (a *Admin) Serve(w http.ResponseWriter, r *http.Request) error {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, AdminPrefix), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[1] != "fleets" {
		return adminError(http.StatusNotFound, "want %s{name}/fleets[/{fleet_id}]", AdminPrefix)
	}
	o := a.Find(parts[0])
	if o == nil {
		return adminError(http.StatusNotFound, "no qos_discovery handler named %q is configured", parts[0])
	}
	if len(parts) == 2 || parts[2] == "" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			return adminError(http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
		}
		return writeAdminJSON(w, overridesJSON(o))
	}
	fleet := parts[2]
	switch r.Method {
	case http.MethodGet:
		list, ok := o.Get(fleet)
		if !ok {
			return adminError(http.StatusNotFound, "fleet %q has no override", fleet)
		}
		return writeAdminJSON(w, adminFleet{Servers: adminServers(list)})
	case http.MethodPut, http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxServersPayload+1))
		if err != nil {
			if a.Logger != nil {
				a.Logger.Warn("qos_discovery admin: reading a request body", zap.Error(err))
			}
			return adminError(http.StatusBadRequest, "the request body could not be read")
		}
		servers, err := ParseServers(body)
		if err != nil {
			return adminError(http.StatusBadRequest, "fleet %q: %v", fleet, err)
		}
		if err := o.Set(fleet, servers); err != nil {
			if errors.Is(err, ErrSharedUnavailable) {
				return unavailable(w, err)
			}
			return adminError(http.StatusBadRequest, "%v", err)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	case http.MethodDelete:
		found, err := o.Delete(fleet)
		if err != nil {
			return unavailable(w, err)
		}
		if !found {
			return adminError(http.StatusNotFound, "fleet %q has no override", fleet)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Allow", "GET, PUT, POST, DELETE")
	return adminError(http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
}

// unavailable is the answer to a change the shared store could not take:
// 503, to be tried again.
func unavailable(w http.ResponseWriter, err error) error {
	w.Header().Set("Retry-After", "1")
	return adminError(http.StatusServiceUnavailable, "%v; nothing was changed: try again", err)
}

// adminServer is a server as the admin API writes it: the protocol
// document's field names.
type adminServer struct {
	LocationID int64  `json:"location_id,omitempty"`
	RegionID   string `json:"region_id,omitempty"`
	IPv4       string `json:"ipv4,omitempty"`
	IPv6       string `json:"ipv6,omitempty"`
	Port       int    `json:"port,omitempty"`
}

type adminFleet struct {
	Servers []adminServer `json:"servers"`
}

func adminServers(list []Server) []adminServer {
	out := make([]adminServer, len(list))
	for i, s := range list {
		out[i] = adminServer(s)
	}
	return out
}

func overridesJSON(o *Overrides) map[string]any {
	fleets := map[string]any{}
	ids := o.IDs()
	sort.Strings(ids)
	for _, id := range ids {
		if list, ok := o.Get(id); ok {
			fleets[id] = adminFleet{Servers: adminServers(list)}
		}
	}
	return map[string]any{"fleets": fleets}
}

func writeAdminJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}
