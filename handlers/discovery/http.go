package discovery

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Access is who may read a discovery service: clients whose address is in
// Allow (none: every address), presenting one of Keys (none: no key
// needed). Failures limits the requests without a valid key from each
// client network (see httpauth.Guard); nil limits nothing.
type Access struct {
	Allow    []netip.Prefix
	Keys     *httpauth.Keys
	Failures httpauth.Limiter
}

// Restricted reports whether answers are for some callers only, so shared
// caches must not keep them (Cache-Control: private).
func (a Access) Restricted() bool { return len(a.Allow) > 0 || a.Keys.Required() }

func (a Access) allowed(client netip.Addr) bool {
	if len(a.Allow) == 0 {
		return true
	}
	if !client.IsValid() {
		return false
	}
	addr := client.Unmap().WithZone("")
	for _, p := range a.Allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// FleetFromPath finds the fleet ID in a path ending in
// /v1/fleets/{fleet_id}/servers, under any prefix.
func FleetFromPath(path string) (string, bool) {
	rest, ok := strings.CutSuffix(path, "/servers")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "/v1/fleets/")
	if i < 0 {
		return "", false
	}
	id := rest[i+len("/v1/fleets/"):]
	if id == "" || strings.IndexByte(id, '/') >= 0 {
		return "", false
	}
	return id, true
}

// Handler answers the discovery endpoint over HTTP: the access checks,
// the method check, then the Service's answer.
type Handler struct {
	Service *Service
	Access  Access
	// ClientIP gives the caller's address as the server determined it,
	// honouring trusted proxies. Default: clientaddr.RemoteAddr.
	ClientIP clientaddr.FromRequest
}

// ServeFleet answers a request for fleet and returns the status written:
//   - 403 text/plain "access denied for <address>" outside the allow-list
//     (the discovery protocol's answer);
//   - 429 with Retry-After when the caller's network sent too many
//     requests without a valid API key, whatever this one presents;
//   - 401 with "WWW-Authenticate: Bearer" without a valid API key (see
//     package httpauth);
//   - 405 with Allow for methods other than GET and HEAD;
//   - otherwise what Service.Serve writes.
func (h *Handler) ServeFleet(w http.ResponseWriter, r *http.Request, fleet string) int {
	from := h.ClientIP
	if from == nil {
		from = clientaddr.RemoteAddr
	}
	client := from(r)
	if !h.Access.allowed(client) {
		who := "an unknown address"
		if client.IsValid() {
			who = client.String()
		}
		writeText(w, r, http.StatusForbidden, "access denied for "+who)
		return http.StatusForbidden
	}
	guard := httpauth.Guard{Keys: h.Access.Keys, Failures: h.Access.Failures}
	network := "" // only a service with keys counts failures by network
	if h.Access.Keys.Required() {
		network = clientaddr.NetworkString(client, 0, 0)
	}
	switch status, wait := guard.Check(r.Context(), r, network); status {
	case http.StatusTooManyRequests:
		retry := ratelimit.RetryAfter(wait)
		w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
		writeText(w, r, status, fmt.Sprintf("too many requests without a valid API key from this client's network; try again in %ds", retry))
		return status
	case http.StatusUnauthorized:
		httpauth.SetChallenge(w.Header())
		writeText(w, r, status, "a valid API key is required (Authorization: Bearer <key>)")
		return status
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
		return http.StatusMethodNotAllowed
	}
	return h.Service.Serve(w, r, fleet)
}

func writeText(w http.ResponseWriter, r *http.Request, status int, body string) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}
