package query

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// The X-Gamegate-Cache values, and the Age values formatted once.
var (
	cacheHeaders = [...]string{cacheHit: "hit", cacheMiss: "miss", cacheShared: "shared", cacheStale: "stale"}
	ageValues    = func() (v [600]string) {
		for i := range v {
			v[i] = strconv.Itoa(i)
		}
		return v
	}()
)

func ageValue(seconds int64) string {
	if seconds >= 0 && seconds < int64(len(ageValues)) {
		return ageValues[seconds]
	}
	return strconv.FormatInt(seconds, 10)
}

// errorBody is an error answer: {"error": {"type": …, "message": …,
// "protocol_status": …}, "server": …}. The type is stable (ErrorType), the
// message words for people.
type errorBody struct {
	Error  errorDetail `json:"error"`
	Server string      `json:"server,omitempty"` // none for a batch's own errors
}

type errorDetail struct {
	Type           ErrorType `json:"type"`
	Message        string    `json:"message"`
	ProtocolStatus int       `json:"protocol_status,omitempty"`
}

func errorAnswer(server string, e *Error) *answer {
	body, _ := json.Marshal(errorBody{Server: server,
		Error: errorDetail{Type: e.Kind(), Message: e.Message, ProtocolStatus: e.ProtocolStatus}})
	return newAnswer(e.HTTPStatus, body, "")
}

// ServeHTTP answers a request whose path, below the handler's prefix, is
//
//	GET  /{server}                    the server's normalised status
//	GET  /{server}/{command}?arg=…    a protocol command's answer
//	POST /                            a batch: {"servers": [...], "commands": [...]}
//
// where {server} is a configured server's name, an ad-hoc host:port, or
// with Games an ad-hoc {game}/{host[:port]} (a configured name wins), and
// returns the status code it answered with. A cached answer costs no
// allocation: its body and header values were built when it was loaded.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request, path string) int {
	path = strings.Trim(path, "/")
	if path == "" || path == "batch" {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			return g.writeError(w, r, "", Errorf(http.StatusMethodNotAllowed, "a batch is a POST"))
		}
		return g.batch(w, r)
	}
	name, command, _ := strings.Cut(path, "/")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return g.writeError(w, r, name, Errorf(http.StatusMethodNotAllowed, "use GET or HEAD"))
	}
	if _, named := g.named[name]; !named && g.cfg.Games != nil && command != "" && !strings.Contains(name, ":") {
		// /{game}/{host[:port]}[/{command}]: an ad-hoc target by game ID.
		address, rest, _ := strings.Cut(command, "/")
		name, command = name+"/"+address, rest
	}
	if command == "" {
		command = "status"
	} else if strings.Contains(command, "/") {
		return g.writeError(w, r, name, Errorf(http.StatusNotFound, "want /{server} or /{server}/{command}"))
	}
	var args []string
	if r.URL.RawQuery != "" {
		args = r.URL.Query()["arg"]
	}
	a, res, e := g.request(r.Context(), func() netip.Addr { return g.cfg.ClientIP(r) }, name, command, args)
	if e != nil {
		if res.State != 0 {
			// The error is a query's, loaded or served from the cache
			// (negative_ttl): say which, as for an answer.
			w.Header().Set("X-Gamegate-Cache", cacheState(res))
			if age := res.Age; age > 0 {
				w.Header().Set("Age", ageValue(int64(age/time.Second)))
			}
		}
		return g.writeError(w, r, name, e)
	}
	return g.write(w, r, a, res)
}

func (g *Gateway) write(w http.ResponseWriter, r *http.Request, a *answer, res cache.Result[*answer]) int {
	h, v := w.Header(), new(cache.HeaderValues)
	v.Set(h, 0, "Content-Type", "application/json")
	v.Set(h, 1, "X-Gamegate-Cache", cacheHeaders[cacheStateOf(res)])
	if age := res.Age; age > 0 {
		v.Set(h, 2, "Age", ageValue(int64(age/time.Second)))
	}
	if a.etag != "" {
		v.Set(h, 3, "Etag", a.etag)
		if inm := r.Header["If-None-Match"]; len(inm) > 0 && inm[0] != "" && cache.IfNoneMatch(inm[0], a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified
		}
	}
	v.Set(h, 4, "Content-Length", a.length)
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
	return a.status
}

// How the cache served an answer: the X-Gamegate-Cache header's values.
const (
	cacheHit = iota
	cacheMiss
	cacheShared
	cacheStale
)

func cacheStateOf(res cache.Result[*answer]) int {
	switch {
	case res.State == cache.Stale:
		return cacheStale
	case res.Loaded:
		return cacheMiss
	case res.Shared:
		return cacheShared
	}
	return cacheHit
}

func cacheState(res cache.Result[*answer]) string { return cacheHeaders[cacheStateOf(res)] }

func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, server string, e *Error) int {
	a := errorAnswer(server, e)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(ratelimit.RetryAfter(e.RetryAfter), 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", a.length)
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
	return a.status
}
