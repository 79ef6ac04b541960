package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Serve answers a request for endpoint ep and returns the status written.
// The method is checked before the token, so a wrong method is a 405 even
// without one.
func (a *API) Serve(w http.ResponseWriter, r *http.Request, ep APIEndpoint) int {
	hdr := w.Header()
	if !ep.allows(r.Method) {
		hdr.Set("Allow", ep.allow())
		return a.writeError(w, r, errKindMethodNotAllowed.err(fmt.Sprintf("%s is not allowed on /v1/%s; use %s", r.Method, ep, ep.allow())))
	}
	ctx := r.Context()
	ip := a.cfg.ClientIP(r)
	c := caller{
		client:  ClientKey(ip, a.cfg.ClientIPv6Prefix),
		network: NetworkKey(ip, a.cfg.NetworkIPv4Prefix, a.cfg.NetworkIPv6Prefix),
	}
	if a.tokens.Required() {
		// A network past its failures is refused before its token is
		// looked at, valid or not: otherwise 429 for a wrong token and
		// 200 for the right one would let the guessing go on.
		if wait := a.authFailures.Wait(ctx, c.network); wait > 0 {
			e := errKindTooManyRequests.err(fmt.Sprintf("too many requests without a valid token from this client's network; try again in %ds", ratelimit.RetryAfter(wait)))
			e.retryAfter = wait
			return a.writeError(w, r, e)
		}
		if !a.tokens.Allow(r) {
			a.authFailures.Decide(ctx, c.network)
			httpauth.SetChallenge(hdr)
			return a.writeError(w, r, errKindUnauthorized.err("a valid token is required: Authorization: Bearer <token> (or X-Api-Key: <token>)"))
		}
	}
	for _, l := range a.limits(ep) {
		key, who := c.client, "this client"
		if l.network {
			key, who = c.network, "this client's network"
		}
		if ok, retry := l.Decide(ctx, key); !ok {
			e := errKindTooManyRequests.err(fmt.Sprintf("too many /v1/%s requests from %s; try again in %ds", ep, who, ratelimit.RetryAfter(retry)))
			e.retryAfter = retry
			return a.writeError(w, r, e)
		}
	}
	var (
		status int
		data   any
		e      *APIError
	)
	switch ep {
	case EndpointAllocate:
		status, data, e = a.allocate(w, r, c)
	case EndpointJoinCode:
		status, data, e = a.joinCode(w, r, c)
	case EndpointJoin:
		status, data, e = a.join(w, r, c)
	case EndpointRegions:
		status, data = http.StatusOK, RegionsData{Regions: a.regions}
	default:
		e = errKindInternal.err("unknown endpoint")
	}
	if e != nil {
		return a.writeError(w, r, e)
	}
	body, err := json.Marshal(APIResponse[any]{Meta: APIMeta{RequestID: newUUID(), Status: status}, Data: data})
	if err != nil {
		return a.writeError(w, r, errKindInternal.err("encoding the answer failed"))
	}
	writeJSON(w, r, status, "application/json", body)
	return status
}

// caller is who sent a request: its client key and its network's.
type caller struct{ client, network string }

// keyedLimiter is a Limiter with what it is keyed by: the client, or its
// network.
type keyedLimiter struct {
	Limiter
	network bool
}

// limits returns the rate limits of ep, in the order they are applied: the
// client's own first, so that a client past its limit spends nothing of
// its network's.
func (a *API) limits(ep APIEndpoint) []keyedLimiter {
	switch ep {
	case EndpointAllocate:
		return []keyedLimiter{{a.allocateRate, false}}
	case EndpointJoinCode:
		return []keyedLimiter{{a.joinCodeRate, false}}
	case EndpointJoin:
		return []keyedLimiter{{a.joinRate, false}, {a.joinNetworkRate, true}}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store") // answers hold keys
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func (a *API) writeError(w http.ResponseWriter, r *http.Request, e *APIError) int {
	body, _ := json.Marshal(e) // strings and ints only: cannot fail
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(ratelimit.RetryAfter(e.retryAfter), 10))
	}
	writeJSON(w, r, e.Status, "application/problem+json", body)
	return e.Status
}

// decode reads one JSON object from the size-limited body into v, a
// pointer to a struct, refusing unknown fields (by exact name: the JSON tags
// of v's fields) and trailing data.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any) *APIError {
	tooLarge := func() *APIError {
		return errKindTooLarge.err(fmt.Sprintf("the request body exceeds %d bytes", a.cfg.MaxBody))
	}
	if r.ContentLength > a.cfg.MaxBody {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		a.cfg.Logger.Debug("relay api: reading a request body", zap.Error(err))
		return errKindInvalidRequest.err("the request body could not be read")
	}
	// First the shape: one JSON object, nothing after it, known fields only.
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errKindInvalidRequest.err("the request body holds data after its JSON object")
	}
	known := jsonFields(reflect.TypeOf(v).Elem())
	names := make([]string, 0, len(fields))
	for name := range fields {
		if !known[name] {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		slices.Sort(names) // the same answer for the same body
		return errKindInvalidRequest.err("unknown field "+strconv.Quote(names[0]), APIErrorDetail{Key: names[0], Value: "unknown field"})
	}
	// Then the values.
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	return nil
}

func decodeError(err error) *APIError {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return errKindInvalidRequest.err("the request body is empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errKindInvalidRequest.err("the request body is not valid JSON: it ends early")
	case errors.As(err, &syntax):
		return errKindInvalidRequest.err(fmt.Sprintf("the request body is not valid JSON: %v (at byte %d)", syntax, syntax.Offset))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errKindInvalidRequest.err("the request body must be a JSON object, not " + typ.Value)
		}
		problem := fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)
		return errKindInvalidRequest.err(typ.Field+" "+problem, APIErrorDetail{Key: typ.Field, Value: problem})
	}
	return errKindInvalidRequest.err("the request body is not a valid request")
}

// jsonFieldSets caches jsonFields by type.
var jsonFieldSets sync.Map // reflect.Type → map[string]bool

// jsonFields returns the JSON names of the fields of struct type t, from
// their json tags (or Go names), computed once per type.
func jsonFields(t reflect.Type) map[string]bool {
	if m, ok := jsonFieldSets.Load(t); ok {
		return m.(map[string]bool)
	}
	m := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = true
	}
	jsonFieldSets.Store(t, m)
	return m
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "uint16":
		return "an integer"
	case "string":
		return "a string"
	}
	return "a " + goKind
}
