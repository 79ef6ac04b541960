package relay

// The allocations REST API: the service through which the shipped Unity
// clients obtain relay allocations and join codes, answered with the shapes
// of Unity's Relay Allocations service.

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/httpauth"
	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Join codes are JoinCodeLen characters drawn uniformly from
// JoinCodeAlphabet, which leaves out characters that look alike (0/O, 1/I,
// 5/S, ...). Unity documents join codes as case-insensitive, six to twelve
// characters from this alphabet.
const (
	JoinCodeAlphabet = "6789BCDFGHJKLMNPQRTW"
	JoinCodeLen      = 6

	joinCodeMaxLen = 12 // the longest join code Unity documents
	// A joinCode longer than this is refused with 400 rather than looked up.
	joinCodeMaxInput = 64
	// How many fresh codes are drawn before giving up on finding one that
	// no live code holds: with 20^6 codes this only fails when storage does.
	joinCodeAttempts = 10
)

// Storage keys. A join code's record carries what /v1/join answers, so a
// join needs one read; an allocation's record carries what /v1/joincode
// needs and the join code it was last given.
const (
	apiAllocationsPrefix = "gamegate/relay/allocations"
	apiJoinCodesPrefix   = "gamegate/relay/joincodes"
)

// Defaults of APIConfig.
const (
	DefaultAPIMaxConnections = 100
	DefaultAllocationTTL     = time.Hour
	DefaultJoinCodeTTL       = 15 * time.Minute
	DefaultMaxAllocations    = 10_000
	DefaultAPIMaxBody        = 64 << 10
	DefaultAPISweepInterval  = 5 * time.Minute
)

// APIStore is the key-value storage that allocations and join codes live in;
// API instances sharing one store share their join codes. Load returns an
// error matching fs.ErrNotExist for a missing key, Delete of a missing key
// is not an error, and List returns full keys. Caddy's storage modules
// (certmagic.Storage) satisfy it.
type APIStore interface {
	Store(ctx context.Context, key string, value []byte) error
	Load(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, path string, recursive bool) ([]string, error)
}

// APIRegion is a region that allocations may be requested in.
type APIRegion struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// ValidateRegionID reports whether id can name a region: 1 to 64 ASCII
// letters, digits, '.', '_' or '-'.
func ValidateRegionID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("region ID %q must be 1 to 64 characters", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("region ID %q may hold only letters, digits, '.', '_' and '-'", id)
		}
	}
	return nil
}

// APIConfig is the behaviour of an API.
type APIConfig struct {
	// Sealer seals the connection data of new allocations. Required.
	Sealer *Sealer
	// Store holds allocations and join codes. Required.
	Store APIStore
	// Tokens are the bearer tokens accepted, checked as package httpauth
	// says; none means no authentication.
	Tokens [][]byte
	// Regions offered; the first is the default. Required.
	Regions []APIRegion
	// PublicHost and PublicPort are the relay's UDP address as clients
	// reach it, written into every allocation. Required.
	PublicHost string
	PublicPort int
	// MaxConnections bounds the maxConnections of /v1/allocate.
	// Default: 100.
	MaxConnections int
	// AllocationTTL is how long a new allocation may first be bound.
	// Default: 1h.
	AllocationTTL time.Duration
	// JoinCodeTTL is how long a join code is valid. Default: 15m.
	JoinCodeTTL time.Duration
	// MaxAllocations bounds the unexpired allocations counted by Limiter.
	// Default: 10000.
	MaxAllocations int
	// Limiter counts unexpired allocations; APIs may share one. Default: a
	// new one.
	Limiter *AllocationLimiter
	// MaxBody bounds request bodies, in bytes. Default: 64 KiB.
	MaxBody int64
	// SweepInterval is how often Start's sweeper deletes expired records
	// from Store. Default: 5m.
	SweepInterval time.Duration
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Rand is the randomness join codes are drawn from. Default:
	// crypto/rand.
	Rand io.Reader
	// Logger receives storage failures. Default: none.
	Logger *zap.Logger
	// OnAllocation and OnJoinCode, if set, are called for each allocation
	// and each new join code made.
	OnAllocation func()
	OnJoinCode   func()
}

// API answers the allocations REST API. It is safe for concurrent use.
type API struct {
	cfg         APIConfig
	tokens      *httpauth.Keys
	regions     []APIRegion
	relayServer APIRelayServer
	endpoints   []APIServerEndpoint
	codeLocks   keyedMutex

	stop chan struct{}
	done sync.WaitGroup
}

// NewAPI checks cfg, fills in its defaults and returns the API.
func NewAPI(cfg APIConfig) (*API, error) {
	switch {
	case cfg.Sealer == nil:
		return nil, errors.New("relay api: a sealer is required")
	case cfg.Store == nil:
		return nil, errors.New("relay api: a store is required")
	case len(cfg.Regions) == 0:
		return nil, errors.New("relay api: at least one region is required")
	case cfg.PublicHost == "":
		return nil, errors.New("relay api: the public host is required")
	case cfg.PublicPort < 1 || cfg.PublicPort > 65535:
		return nil, fmt.Errorf("relay api: public port %d out of range", cfg.PublicPort)
	case cfg.MaxConnections < 0 || cfg.MaxConnections > math.MaxUint16:
		return nil, fmt.Errorf("relay api: max connections %d out of range [1, %d]", cfg.MaxConnections, math.MaxUint16)
	case cfg.AllocationTTL < 0 || cfg.JoinCodeTTL < 0 || cfg.SweepInterval < 0:
		return nil, errors.New("relay api: durations must not be negative")
	case cfg.MaxAllocations < 0 || cfg.MaxBody < 0:
		return nil, errors.New("relay api: limits must not be negative")
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultAPIMaxConnections
	}
	if cfg.AllocationTTL == 0 {
		cfg.AllocationTTL = DefaultAllocationTTL
	}
	if cfg.JoinCodeTTL == 0 {
		cfg.JoinCodeTTL = DefaultJoinCodeTTL
	}
	if cfg.MaxAllocations == 0 {
		cfg.MaxAllocations = DefaultMaxAllocations
	}
	if cfg.Limiter == nil {
		cfg.Limiter = NewAllocationLimiter()
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultAPIMaxBody
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = DefaultAPISweepInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	a := &API{
		cfg:         cfg,
		relayServer: APIRelayServer{IPv4: cfg.PublicHost, Port: cfg.PublicPort},
		// gamegate's relay speaks plain UDP only: no dtls or wss endpoint.
		endpoints: []APIServerEndpoint{{
			ConnectionType: "udp", Network: "udp", Reliable: false, Secure: false,
			Host: cfg.PublicHost, Port: cfg.PublicPort,
		}},
		stop: make(chan struct{}),
	}
	seen := make(map[string]bool)
	for _, r := range cfg.Regions {
		if err := ValidateRegionID(r.ID); err != nil {
			return nil, fmt.Errorf("relay api: %w", err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("relay api: duplicate region %q", r.ID)
		}
		seen[r.ID] = true
		if r.Description == "" {
			r.Description = r.ID
		}
		a.regions = append(a.regions, r)
	}
	var err error
	if a.tokens, err = httpauth.New(cfg.Tokens...); err != nil {
		return nil, fmt.Errorf("relay api: tokens: %w", err)
	}
	return a, nil
}

// Start runs the sweeper that deletes expired records from the store;
// Stop ends it.
func (a *API) Start() {
	a.done.Add(1)
	go func() {
		defer a.done.Done()
		t := time.NewTicker(a.cfg.SweepInterval)
		defer t.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), a.cfg.SweepInterval)
				if _, err := a.Sweep(ctx); err != nil {
					a.cfg.Logger.Warn("sweeping expired relay allocations and join codes", zap.Error(err))
				}
				cancel()
			}
		}
	}()
}

// Stop ends the sweeper and waits for it.
func (a *API) Stop() {
	close(a.stop)
	a.done.Wait()
}

// Sweep deletes the expired allocation and join code records of the store,
// whoever wrote them, and returns how many it deleted. Records that cannot
// be read as ours are left alone.
func (a *API) Sweep(ctx context.Context) (int, error) {
	now := a.cfg.Now()
	deleted := 0
	for _, prefix := range []string{apiAllocationsPrefix, apiJoinCodesPrefix} {
		keys, err := a.cfg.Store.List(ctx, prefix, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return deleted, err
		}
		for _, key := range keys {
			b, err := a.cfg.Store.Load(ctx, key)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return deleted, err
			}
			var rec struct {
				Expires time.Time `json:"expires"`
			}
			if json.Unmarshal(b, &rec) != nil || rec.Expires.IsZero() || now.Before(rec.Expires) {
				continue
			}
			if err := a.cfg.Store.Delete(ctx, key); err != nil {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, nil
}

// APIEndpoint is one endpoint of the API.
type APIEndpoint uint8

// The endpoints, by the last element of their path.
const (
	EndpointAllocate APIEndpoint = iota + 1 // POST .../v1/allocate
	EndpointJoinCode                        // POST .../v1/joincode
	EndpointJoin                            // POST .../v1/join
	EndpointRegions                         // GET .../v1/regions
)

var endpointNames = [...]string{EndpointAllocate: "allocate", EndpointJoinCode: "joincode", EndpointJoin: "join", EndpointRegions: "regions"}

// String returns the endpoint's name: allocate, joincode, join or regions.
func (e APIEndpoint) String() string {
	if int(e) < len(endpointNames) && endpointNames[e] != "" {
		return endpointNames[e]
	}
	return "APIEndpoint(" + strconv.Itoa(int(e)) + ")"
}

func (e APIEndpoint) allow() string {
	if e == EndpointRegions {
		return "GET, HEAD"
	}
	return http.MethodPost
}

func (e APIEndpoint) allows(method string) bool {
	if e == EndpointRegions {
		return method == http.MethodGet || method == http.MethodHead
	}
	return method == http.MethodPost
}

// APIEndpointFromPath finds the endpoint a path ends in (/v1/allocate,
// /v1/joincode, /v1/join or /v1/regions), under any prefix.
func APIEndpointFromPath(path string) (APIEndpoint, bool) {
	i := strings.LastIndex(path, "/v1/")
	if i < 0 {
		return 0, false
	}
	name := path[i+len("/v1/"):]
	for e, n := range endpointNames {
		if n != "" && n == name {
			return APIEndpoint(e), true
		}
	}
	return 0, false
}

// Requests. Pointers tell a missing field from a zero one.

// AllocateRequest is the body of /v1/allocate.
type AllocateRequest struct {
	MaxConnections *int    `json:"maxConnections"`
	Region         *string `json:"region"`
}

// JoinCodeRequest is the body of /v1/joincode.
type JoinCodeRequest struct {
	AllocationID *string `json:"allocationId"`
}

// JoinRequest is the body of /v1/join.
type JoinRequest struct {
	JoinCode *string `json:"joinCode"`
}

// Responses: every success is {"meta": ..., "data": ...}.

// APIResponse is the envelope of every successful answer.
type APIResponse[T any] struct {
	Meta APIMeta `json:"meta"`
	Data T       `json:"data"`
}

// APIMeta describes an answer: a fresh UUID for the request and the HTTP
// status.
type APIMeta struct {
	RequestID string `json:"requestId"`
	Status    int    `json:"status"`
}

// AllocationData is the data of /v1/allocate and /v1/join.
type AllocationData struct {
	Allocation APIAllocation `json:"allocation"`
}

// JoinCodeData is the data of /v1/joincode.
type JoinCodeData struct {
	JoinCode string `json:"joinCode"`
}

// RegionsData is the data of /v1/regions.
type RegionsData struct {
	Regions []APIRegion `json:"regions"`
}

// APIAllocation is an allocation as clients read it. Byte fields are
// base64 (standard, padded) in JSON. HostConnectionData is set by /v1/join
// only.
type APIAllocation struct {
	AllocationID       string              `json:"allocationId"`
	AllocationIDBytes  []byte              `json:"allocationIdBytes"`
	ConnectionData     []byte              `json:"connectionData"`
	Key                []byte              `json:"key"`
	Region             string              `json:"region"`
	RelayServer        APIRelayServer      `json:"relayServer"`
	ServerEndpoints    []APIServerEndpoint `json:"serverEndpoints"`
	HostConnectionData []byte              `json:"hostConnectionData,omitempty"`
}

// APIRelayServer is the relay's address in the form older clients read.
type APIRelayServer struct {
	IPv4 string `json:"ipV4"`
	Port int    `json:"port"`
}

// APIServerEndpoint is one way to reach the relay.
type APIServerEndpoint struct {
	ConnectionType string `json:"connectionType"`
	Network        string `json:"network"`
	Reliable       bool   `json:"reliable"`
	Secure         bool   `json:"secure"`
	Host           string `json:"host"`
	Port           int    `json:"port"`
}

// APIError is the body of every error answer, in Unity's shape (RFC 7807
// fields plus a numeric code the Unity SDK maps to its RelayExceptionReason).
type APIError struct {
	Status  int              `json:"status"`
	Title   string           `json:"title"`
	Detail  string           `json:"detail"`
	Type    string           `json:"type"`
	Code    int              `json:"code"`
	Details []APIErrorDetail `json:"details,omitempty"`

	retryAfter time.Duration // sent as Retry-After
}

// APIErrorDetail names the request field an error is about.
type APIErrorDetail struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (e *APIError) Error() string {
	return strconv.Itoa(e.Status) + " " + e.Title + ": " + e.Detail
}

// Error kinds: the HTTP status, the code (the Unity SDK's
// RelayExceptionReason value of the same meaning) and the type URI.
type apiErrorKind struct {
	status int
	code   int
	typ    string
}

var (
	errKindInvalidRequest     = apiErrorKind{http.StatusBadRequest, 15001, "urn:gamegate:relay:invalid-request"}
	errKindInvalidArgument    = apiErrorKind{http.StatusBadRequest, 15400, "urn:gamegate:relay:invalid-argument"}
	errKindRegionNotFound     = apiErrorKind{http.StatusBadRequest, 15007, "urn:gamegate:relay:region-not-found"}
	errKindUnauthorized       = apiErrorKind{http.StatusUnauthorized, 15401, "urn:gamegate:relay:unauthorized"}
	errKindAllocationNotFound = apiErrorKind{http.StatusNotFound, 15008, "urn:gamegate:relay:allocation-not-found"}
	errKindJoinCodeNotFound   = apiErrorKind{http.StatusNotFound, 15009, "urn:gamegate:relay:join-code-not-found"}
	errKindMethodNotAllowed   = apiErrorKind{http.StatusMethodNotAllowed, 15405, "urn:gamegate:relay:method-not-allowed"}
	errKindTooLarge           = apiErrorKind{http.StatusRequestEntityTooLarge, 15413, "urn:gamegate:relay:request-too-large"}
	errKindInternal           = apiErrorKind{http.StatusInternalServerError, 15500, "urn:gamegate:relay:internal-error"}
	errKindNoCapacity         = apiErrorKind{http.StatusServiceUnavailable, 15010, "urn:gamegate:relay:no-capacity"}
	errKindUnavailable        = apiErrorKind{http.StatusServiceUnavailable, 15503, "urn:gamegate:relay:unavailable"}
)

func (k apiErrorKind) err(detail string, details ...APIErrorDetail) *APIError {
	return &APIError{
		Status: k.status, Title: http.StatusText(k.status), Detail: detail,
		Type: k.typ, Code: k.code, Details: details,
	}
}

func fieldError(field, problem string) *APIError {
	return errKindInvalidArgument.err(field+" "+problem, APIErrorDetail{Key: field, Value: problem})
}

// Serve answers a request for endpoint ep and returns the status written.
// The method is checked before the token, so a wrong method is a 405 even
// without one.
func (a *API) Serve(w http.ResponseWriter, r *http.Request, ep APIEndpoint) int {
	hdr := w.Header()
	if !ep.allows(r.Method) {
		hdr.Set("Allow", ep.allow())
		return a.writeError(w, r, errKindMethodNotAllowed.err(fmt.Sprintf("%s is not allowed on /v1/%s; use %s", r.Method, ep, ep.allow())))
	}
	if !a.tokens.Allow(r) {
		httpauth.SetChallenge(hdr)
		return a.writeError(w, r, errKindUnauthorized.err("a valid token is required: Authorization: Bearer <token> (or X-Api-Key: <token>)"))
	}
	var (
		status int
		data   any
		e      *APIError
	)
	switch ep {
	case EndpointAllocate:
		status, data, e = a.allocate(w, r)
	case EndpointJoinCode:
		status, data, e = a.joinCode(w, r)
	case EndpointJoin:
		status, data, e = a.join(w, r)
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
		w.Header().Set("Retry-After", strconv.FormatInt(retrySeconds(e.retryAfter), 10))
	}
	writeJSON(w, r, e.Status, "application/problem+json", body)
	return e.Status
}

// decode reads one JSON object from the size-limited body into v, refusing
// unknown fields and trailing data.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any) *APIError {
	tooLarge := func() *APIError {
		return errKindTooLarge.err(fmt.Sprintf("the request body exceeds %d bytes", a.cfg.MaxBody))
	}
	if r.ContentLength > a.cfg.MaxBody {
		return tooLarge()
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, a.cfg.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Exactly one value: anything after it but white space is an error.
		if _, err = dec.Token(); errors.Is(err, io.EOF) {
			return nil
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		return errKindInvalidRequest.err("the request body holds data after its JSON object")
	}
	var (
		mbe    *http.MaxBytesError
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
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
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return errKindInvalidRequest.err("unknown field "+strconv.Quote(name), APIErrorDetail{Key: name, Value: "unknown field"})
	}
	return errKindInvalidRequest.err("the request body is not valid: " + err.Error())
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

func (a *API) region(req *string) (string, *APIError) {
	if req == nil || *req == "" {
		return a.regions[0].ID, nil
	}
	for _, r := range a.regions {
		if r.ID == *req {
			return r.ID, nil
		}
	}
	ids := make([]string, len(a.regions))
	for i, r := range a.regions {
		ids[i] = r.ID
	}
	problem := "is not one of " + strings.Join(ids, ", ")
	return "", errKindRegionNotFound.err(fmt.Sprintf("region %q %s", *req, problem), APIErrorDetail{Key: "region", Value: problem})
}

func (a *API) internal(what string, err error) *APIError {
	a.cfg.Logger.Error("relay api: "+what, zap.Error(err))
	return errKindInternal.err(what + " failed")
}

// newAllocation makes an allocation counted against the limit and seals it.
// release gives its place back if the caller fails to hand it out.
func (a *API) newAllocation(maxConnections int, region string) (alloc *Allocation, data []byte, release func(), e *APIError) {
	now := a.cfg.Now()
	expires := now.Add(a.cfg.AllocationTTL)
	if ok, retry := a.cfg.Limiter.Reserve(now, expires, a.cfg.MaxAllocations); !ok {
		e := errKindNoCapacity.err(fmt.Sprintf("this relay holds its limit of %d allocations; try again in %ds", a.cfg.MaxAllocations, retrySeconds(retry)))
		e.retryAfter = retry
		return nil, nil, nil, e
	}
	release = func() { a.cfg.Limiter.Release(expires) }
	alloc, err := NewAllocation(maxConnections, region, expires)
	if err == nil {
		data, err = a.cfg.Sealer.Seal(alloc)
	}
	if err != nil {
		release()
		return nil, nil, nil, a.internal("making an allocation", err)
	}
	if a.cfg.OnAllocation != nil {
		a.cfg.OnAllocation()
	}
	return alloc, data, release, nil
}

func retrySeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

func (a *API) view(alloc *Allocation, data []byte) APIAllocation {
	return APIAllocation{
		AllocationID:      alloc.ID.String(),
		AllocationIDBytes: alloc.ID[:],
		ConnectionData:    data,
		Key:               alloc.Key[:],
		Region:            alloc.Region,
		RelayServer:       a.relayServer,
		ServerEndpoints:   a.endpoints,
	}
}

// storedAllocation is an allocation's record, under
// gamegate/relay/allocations/<uuid>.
type storedAllocation struct {
	ConnectionData []byte    `json:"connectionData"`
	Region         string    `json:"region"`
	Expires        time.Time `json:"expires"`
	JoinCode       string    `json:"joinCode,omitempty"`
}

// storedJoinCode is a join code's record, under
// gamegate/relay/joincodes/<CODE>.
type storedJoinCode struct {
	AllocationID   string    `json:"allocationId"`
	ConnectionData []byte    `json:"connectionData"`
	Region         string    `json:"region"`
	Expires        time.Time `json:"expires"`
}

func allocationKey(id wirerelay.AllocationID) string { return apiAllocationsPrefix + "/" + id.String() }
func joinCodeKey(code string) string                 { return apiJoinCodesPrefix + "/" + code }

func (a *API) store(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.cfg.Store.Store(ctx, key, b)
}

// load reads the record at key into v; found is false if there is none.
func (a *API) load(ctx context.Context, key string, v any) (found bool, err error) {
	b, err := a.cfg.Store.Load(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("record %s: %w", key, err)
	}
	return true, nil
}

// allocate answers POST /v1/allocate: 201 with a new allocation, whose
// record is stored for /v1/joincode.
func (a *API) allocate(w http.ResponseWriter, r *http.Request) (int, any, *APIError) {
	var req AllocateRequest
	if e := a.decode(w, r, &req); e != nil {
		return 0, nil, e
	}
	if req.MaxConnections == nil {
		return 0, nil, fieldError("maxConnections", "is required")
	}
	if n := *req.MaxConnections; n < 1 || n > a.cfg.MaxConnections {
		return 0, nil, fieldError("maxConnections", fmt.Sprintf("must be between 1 and %d, not %d", a.cfg.MaxConnections, n))
	}
	region, e := a.region(req.Region)
	if e != nil {
		return 0, nil, e
	}
	alloc, data, release, e := a.newAllocation(*req.MaxConnections, region)
	if e != nil {
		return 0, nil, e
	}
	rec := storedAllocation{ConnectionData: data, Region: region, Expires: alloc.Expires}
	if err := a.store(r.Context(), allocationKey(alloc.ID), rec); err != nil {
		release()
		return 0, nil, a.internal("storing the allocation", err)
	}
	return http.StatusCreated, AllocationData{Allocation: a.view(alloc, data)}, nil
}

// joinCode answers POST /v1/joincode: 201 with a new join code, or 200 with
// the one the allocation already has while that one is valid.
func (a *API) joinCode(w http.ResponseWriter, r *http.Request) (int, any, *APIError) {
	var req JoinCodeRequest
	if e := a.decode(w, r, &req); e != nil {
		return 0, nil, e
	}
	if req.AllocationID == nil || *req.AllocationID == "" {
		return 0, nil, fieldError("allocationId", "is required")
	}
	id, err := ParseAllocationID(*req.AllocationID)
	if err != nil {
		return 0, nil, fieldError("allocationId", "must be a UUID such as 6fa459ea-ee8a-4ca4-894e-db77e160355e")
	}
	// One request at a time per allocation in this process, so that
	// concurrent requests agree on one code. Instances sharing a store may
	// still race and each hand out a code; both then work.
	defer a.codeLocks.lock(id.String())()

	ctx := r.Context()
	now := a.cfg.Now()
	notFound := errKindAllocationNotFound.err("allocation " + id.String() + " was not found or has expired")
	var alloc storedAllocation
	found, err := a.load(ctx, allocationKey(id), &alloc)
	if err != nil {
		return 0, nil, a.internal("reading the allocation", err)
	}
	if !found {
		return 0, nil, notFound
	}
	if !now.Before(alloc.Expires) {
		if err := a.cfg.Store.Delete(ctx, allocationKey(id)); err != nil {
			a.cfg.Logger.Warn("deleting an expired allocation", zap.String("allocation", id.String()), zap.Error(err))
		}
		return 0, nil, notFound
	}
	if alloc.JoinCode != "" {
		var rec storedJoinCode
		found, err := a.load(ctx, joinCodeKey(alloc.JoinCode), &rec)
		if err != nil {
			return 0, nil, a.internal("reading the join code", err)
		}
		if found && rec.AllocationID == id.String() && now.Before(rec.Expires) {
			return http.StatusOK, JoinCodeData{JoinCode: alloc.JoinCode}, nil
		}
	}
	rec := storedJoinCode{
		AllocationID: id.String(), ConnectionData: alloc.ConnectionData,
		Region: alloc.Region, Expires: now.Add(a.cfg.JoinCodeTTL),
	}
	for range joinCodeAttempts {
		code, err := NewJoinCode(a.cfg.Rand)
		if err != nil {
			return 0, nil, a.internal("drawing a join code", err)
		}
		var held storedJoinCode
		found, err := a.load(ctx, joinCodeKey(code), &held)
		if err != nil {
			return 0, nil, a.internal("reading a join code", err)
		}
		if found && now.Before(held.Expires) {
			continue // a live code has it: draw again
		}
		if err := a.store(ctx, joinCodeKey(code), rec); err != nil {
			return 0, nil, a.internal("storing the join code", err)
		}
		alloc.JoinCode = code
		if err := a.store(ctx, allocationKey(id), alloc); err != nil {
			return 0, nil, a.internal("storing the allocation", err)
		}
		if a.cfg.OnJoinCode != nil {
			a.cfg.OnJoinCode()
		}
		return http.StatusCreated, JoinCodeData{JoinCode: code}, nil
	}
	return 0, nil, errKindUnavailable.err("no free join code was found; try again")
}

// join answers POST /v1/join: 200 with a new allocation for the joiner (one
// connection, the host's region) and the host's connection data.
func (a *API) join(w http.ResponseWriter, r *http.Request) (int, any, *APIError) {
	var req JoinRequest
	if e := a.decode(w, r, &req); e != nil {
		return 0, nil, e
	}
	if req.JoinCode == nil || *req.JoinCode == "" {
		return 0, nil, fieldError("joinCode", "is required")
	}
	if len(*req.JoinCode) > joinCodeMaxInput {
		return 0, nil, fieldError("joinCode", fmt.Sprintf("must be a join code of %d to %d characters", JoinCodeLen, joinCodeMaxLen))
	}
	notFound := errKindJoinCodeNotFound.err(fmt.Sprintf("join code %q was not found or has expired", *req.JoinCode))
	code, ok := NormalizeJoinCode(*req.JoinCode)
	if !ok {
		return 0, nil, notFound // no code of ours looks like this
	}
	ctx := r.Context()
	var rec storedJoinCode
	found, err := a.load(ctx, joinCodeKey(code), &rec)
	if err != nil {
		return 0, nil, a.internal("reading the join code", err)
	}
	if !found {
		return 0, nil, notFound
	}
	if !a.cfg.Now().Before(rec.Expires) {
		if err := a.cfg.Store.Delete(ctx, joinCodeKey(code)); err != nil {
			a.cfg.Logger.Warn("deleting an expired join code", zap.String("join_code", code), zap.Error(err))
		}
		return 0, nil, notFound
	}
	alloc, data, _, e := a.newAllocation(1, rec.Region)
	if e != nil {
		return 0, nil, e
	}
	view := a.view(alloc, data)
	view.HostConnectionData = rec.ConnectionData
	return http.StatusOK, AllocationData{Allocation: view}, nil
}

// NewJoinCode draws a join code from r: each character uniformly from
// JoinCodeAlphabet (bytes at or above the largest multiple of the alphabet's
// size are drawn again, so there is no modulo bias).
func NewJoinCode(r io.Reader) (string, error) {
	const n = len(JoinCodeAlphabet)
	const limit = 256 - 256%n
	var code, buf [JoinCodeLen]byte
	for i := 0; i < JoinCodeLen; {
		// Read only what is missing, so no randomness is thrown away.
		chunk := buf[:JoinCodeLen-i]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return "", err
		}
		for _, b := range chunk {
			if int(b) < limit {
				code[i] = JoinCodeAlphabet[int(b)%n]
				i++
			}
		}
	}
	return string(code[:]), nil
}

// NormalizeJoinCode upper-cases s and reports whether it has the form of a
// join code: 6 to 12 characters of JoinCodeAlphabet.
func NormalizeJoinCode(s string) (string, bool) {
	if len(s) < JoinCodeLen || len(s) > joinCodeMaxLen {
		return "", false
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
			b[i] = c
		}
		if strings.IndexByte(JoinCodeAlphabet, c) < 0 {
			return "", false
		}
	}
	return string(b), true
}

// ParseAllocationID parses a UUID in its canonical text form
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, either case).
func ParseAllocationID(s string) (wirerelay.AllocationID, error) {
	if len(s) != 36 {
		return wirerelay.AllocationID{}, errors.New("not a UUID")
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return wirerelay.AllocationID{}, errors.New("not a UUID")
	}
	return wirerelay.AllocationID(id), nil
}

// newUUID returns a random (version 4) UUID for a request ID.
func newUUID() string { return uuid.NewString() }

// AllocationLimiter counts unexpired allocations, for a limit on how many
// are handed out. It is safe for concurrent use.
type AllocationLimiter struct {
	mu       sync.Mutex
	expiries expiryHeap // unix nanoseconds
}

// NewAllocationLimiter returns an empty limiter.
func NewAllocationLimiter() *AllocationLimiter { return &AllocationLimiter{} }

// Reserve counts an allocation expiring at expires if fewer than limit
// unexpired ones are counted at now. Otherwise it reports how long until
// the next one expires.
func (l *AllocationLimiter) Reserve(now, expires time.Time, limit int) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now)
	if len(l.expiries) >= limit {
		return false, time.Duration(l.expiries[0] - now.UnixNano())
	}
	heap.Push(&l.expiries, expires.UnixNano())
	return true, 0
}

// Release uncounts one allocation expiring at expires (one whose Reserve
// succeeded but that was not handed out).
func (l *AllocationLimiter) Release(expires time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := expires.UnixNano()
	for i, e := range l.expiries {
		if e == at {
			heap.Remove(&l.expiries, i)
			return
		}
	}
}

// Len returns how many unexpired allocations are counted at now.
func (l *AllocationLimiter) Len(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now)
	return len(l.expiries)
}

func (l *AllocationLimiter) prune(now time.Time) {
	t := now.UnixNano()
	for len(l.expiries) > 0 && l.expiries[0] <= t {
		heap.Pop(&l.expiries)
	}
}

type expiryHeap []int64

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// keyedMutex is a set of mutexes by key, each existing while it is held or
// waited for.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// lock locks key's mutex and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyedEntry)
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
