package relay

// The allocations REST API: the service through which the shipped Unity
// clients obtain relay allocations and join codes, answered with the shapes
// of Unity's Relay Allocations service.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/httpauth"
	"github.com/gamegate/gamegate/internal/periodic"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Defaults of APIConfig.
const (
	DefaultAPIMaxConnections = 100
	DefaultAllocationTTL     = time.Hour
	DefaultJoinCodeTTL       = 15 * time.Minute
	DefaultMaxAllocations    = 10_000
	DefaultAPIMaxBody        = 64 << 10
	DefaultAPISweepInterval  = 5 * time.Minute

	// Per-client limits: requests per second and burst of each endpoint,
	// allocations held, and the clients each rate table holds.
	DefaultJoinRate                = 0.2
	DefaultJoinBurst               = 10
	DefaultAllocateRate            = 0.2
	DefaultAllocateBurst           = 10
	DefaultJoinCodeRate            = 1
	DefaultJoinCodeBurst           = 10
	DefaultMaxAllocationsPerClient = 100
	DefaultMaxClients              = 65536

	// Per-network limits (a network: an IPv4 /24 or an IPv6 /48 by
	// default), so that a holder of many addresses in few networks is
	// limited as a few clients, not as many: allocations held, /v1/join
	// requests, and failed authentications (past the burst, the network's
	// requests get 429 until the rate has earned it another attempt).
	DefaultMaxAllocationsPerNetwork = 500
	DefaultJoinNetworkRate          = 1
	DefaultJoinNetworkBurst         = 30
	DefaultAuthFailureRate          = 0.1
	DefaultAuthFailureBurst         = 20
)

// APIConfig is the behaviour of an API.
type APIConfig struct {
	// The options of the relay_allocations handler that are the API's.
	APIOptions
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
	// Limiter counts unexpired allocations; APIs may share one. Default: a
	// new one.
	Limiter *AllocationLimiter
	// NewLimiter returns the limiter of the named rate limit (one of the
	// Limit constants) at rate per second and burst at once. Default:
	// Rates' LocalLimiter of that name, admitting MaxClients keys.
	NewLimiter func(name string, rate float64, burst int) (Limiter, error)
	// Rates holds the per-client request rates; APIs may share one, and it
	// may outlive an API (kept across configuration reloads, a reload does
	// not reset the clients' limits). NewAPI changes nothing in it.
	// Default: a new one.
	Rates *ClientRates
	// ClientIP returns the address of the client that sent r, honouring
	// the server's trusted proxies. Default: clientaddr.RemoteAddr.
	ClientIP clientaddr.FromRequest
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
	// Shared, if set, takes every limit decision for all the nodes
	// sharing it: the rate limits (behind NewLimiter's), and the
	// allocation counts by relay (PublicHost:PublicPort), client and
	// network. When it cannot decide, this API's own limiters and Limiter
	// do. Default: none (this API's own only).
	Shared SharedLimits
	// OnSharedFallback, if set, is called for each decision taken locally
	// because Shared could not take it, with FallbackRate or
	// FallbackAllocations.
	OnSharedFallback func(limit string)
}

// storeRetryAfter is the Retry-After of a 503 for a store that could not
// be reached: every request tries the store afresh.
const storeRetryAfter = time.Second

// API answers the allocations REST API. It is safe for concurrent use.
type API struct {
	cfg         APIConfig
	tokens      *httpauth.Keys
	regions     []APIRegion
	relayServer APIRelayServer
	endpoints   []APIServerEndpoint
	codeLocks   keyedMutex
	pool        string      // this API's relay as Shared counts it: PublicHost:PublicPort
	sharedDown  atomic.Bool // Shared failed last: limits are local

	// The rate limits: per client for each endpoint, per network for
	// /v1/join and for failed authentications.
	joinRate, allocateRate, joinCodeRate, joinNetworkRate, authFailures Limiter

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
	case cfg.PublicHost == "":
		return nil, errors.New("relay api: the public host is required")
	case cfg.PublicPort == 0:
		return nil, errors.New("relay api: the public port is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	a := &API{
		cfg:         cfg,
		relayServer: APIRelayServer{IPv4: cfg.PublicHost, Port: cfg.PublicPort},
		// gamegate's relay speaks plain UDP only: no dtls or wss endpoint.
		endpoints: []APIServerEndpoint{relayEndpoint(cfg.PublicHost, cfg.PublicPort)},
		pool:      net.JoinHostPort(cfg.PublicHost, strconv.Itoa(cfg.PublicPort)),
		stop:      make(chan struct{}),
	}
	for _, r := range cfg.Regions {
		if r.Description == "" {
			r.Description = r.ID
		}
		a.regions = append(a.regions, r)
	}
	var err error
	if a.tokens, err = httpauth.New(cfg.Tokens...); err != nil {
		return nil, fmt.Errorf("relay api: tokens: %w", err)
	}
	if a.cfg.Rates == nil {
		a.cfg.Rates = NewClientRates(cfg.Now)
	}
	if a.cfg.NewLimiter == nil {
		a.cfg.NewLimiter = func(name string, rate float64, burst int) (Limiter, error) {
			return a.cfg.Rates.Local(name, rate, burst, a.cfg.MaxClients)
		}
	}
	for _, t := range []struct {
		dst   *Limiter
		name  string
		rate  float64
		burst int
	}{
		{&a.joinRate, LimitJoin, cfg.JoinRate, cfg.JoinBurst},
		{&a.allocateRate, LimitAllocate, cfg.AllocateRate, cfg.AllocateBurst},
		{&a.joinCodeRate, LimitJoinCode, cfg.JoinCodeRate, cfg.JoinCodeBurst},
		{&a.joinNetworkRate, LimitJoinNetwork, cfg.JoinNetworkRate, cfg.JoinNetworkBurst},
		{&a.authFailures, LimitAuthFailures, cfg.AuthFailureRate, cfg.AuthFailureBurst},
	} {
		local, err := a.cfg.NewLimiter(t.name, t.rate, t.burst)
		if err == nil {
			*t.dst, err = a.shareLimiter(t.name, t.rate, t.burst, local)
		}
		if err != nil {
			return nil, fmt.Errorf("relay api: %s rate: %w", t.name, err)
		}
	}
	return a, nil
}

// setDefaultRate fills in a rate and burst left zero.
// Start runs the sweeper that deletes expired records from the store;
// Stop ends it.
func (a *API) Start() {
	a.done.Go(func() {
		periodic.Run(a.stop, a.cfg.SweepInterval, func() {
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.SweepInterval)
			defer cancel()
			if _, err := a.Sweep(ctx); err != nil {
				a.cfg.Logger.Warn("sweeping expired relay allocations and join codes", zap.Error(err))
			}
		})
	})
}

// Stop ends the sweeper and waits for it.
func (a *API) Stop() {
	close(a.stop)
	a.done.Wait()
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

// internal is the answer to a failure of ours: 503 with Retry-After for a
// store that could not be reached (the request may succeed when retried),
// 500 otherwise. Neither carries the error's text.
func (a *API) internal(what string, err error) *APIError {
	if storeUnavailable(err) {
		a.cfg.Logger.Debug("relay api: "+what+": the store is unavailable", zap.Error(err))
		e := errKindUnavailable.err(what + " failed: the store is unavailable; try again in 1s")
		e.retryAfter = storeRetryAfter
		return e
	}
	a.cfg.Logger.Error("relay api: "+what, zap.Error(err))
	return errKindInternal.err(what + " failed")
}

// newAllocation makes an allocation on this API's relay, counted against
// the limits, and seals it. release gives its place back if the caller
// fails to hand it out.
func (a *API) newAllocation(ctx context.Context, c caller, maxConnections int, region string) (alloc *Allocation, data []byte, release func(), e *APIError) {
	return a.newAllocationOn(ctx, c, maxConnections, region, a.pool)
}

// newAllocationOn is newAllocation on the relay at pool (host:port), in
// whose allocation count it is counted.
func (a *API) newAllocationOn(ctx context.Context, c caller, maxConnections int, region, pool string) (alloc *Allocation, data []byte, release func(), e *APIError) {
	now := a.cfg.Now()
	alloc, err := NewAllocation(maxConnections, region, now.Add(a.cfg.AllocationTTL.Std()))
	if err != nil {
		return nil, nil, nil, a.internal("making an allocation", err)
	}
	holder := Holder{
		Client: c.client, PerClient: a.cfg.MaxAllocationsPerClient,
		Network: c.network, PerNetwork: a.cfg.MaxAllocationsPerNetwork,
	}
	reached, retry, release := a.reserve(ctx, pool, alloc, holder, now)
	switch reached {
	case LimitTotal:
		e := errKindNoCapacity.err(fmt.Sprintf("this relay holds its limit of %d allocations; try again in %ds", a.cfg.MaxAllocations, ratelimit.RetryAfter(retry)))
		e.retryAfter = retry
		return nil, nil, nil, e
	case LimitPerClient:
		e := errKindTooManyRequests.err(fmt.Sprintf("this client holds its limit of %d allocations; try again in %ds", a.cfg.MaxAllocationsPerClient, ratelimit.RetryAfter(retry)))
		e.retryAfter = retry
		return nil, nil, nil, e
	case LimitPerNetwork:
		e := errKindTooManyRequests.err(fmt.Sprintf("this client's network holds its limit of %d allocations; try again in %ds", a.cfg.MaxAllocationsPerNetwork, ratelimit.RetryAfter(retry)))
		e.retryAfter = retry
		return nil, nil, nil, e
	}
	if a.cfg.BindToClientNetwork {
		// A client key that is not an IP address (no client address is
		// known) binds nothing.
		alloc.BindNetwork, _ = netip.ParsePrefix(c.network)
	}
	if data, err = a.cfg.Sealer.Seal(alloc); err != nil {
		release()
		return nil, nil, nil, a.internal("making an allocation", err)
	}
	if a.cfg.OnAllocation != nil {
		a.cfg.OnAllocation()
	}
	return alloc, data, release, nil
}

// view is alloc as the API answers it, on this API's relay.
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

// allocate answers POST /v1/allocate: 201 with a new allocation, whose
// record is stored for /v1/joincode.
func (a *API) allocate(w http.ResponseWriter, r *http.Request, c caller) (int, any, *APIError) {
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
	alloc, data, release, e := a.newAllocation(r.Context(), c, *req.MaxConnections, region)
	if e != nil {
		return 0, nil, e
	}
	rec := storedAllocation{ConnectionData: data, Region: region, Expires: alloc.Expires, Owner: ownerProof(c.client, r), Relay: a.pool}
	if err := a.store(r.Context(), allocationKey(alloc.ID), rec); err != nil {
		release()
		return 0, nil, a.internal("storing the allocation", err)
	}
	return http.StatusCreated, AllocationData{Allocation: a.view(alloc, data)}, nil
}

// joinCode answers POST /v1/joincode: 201 with a new join code, or 200 with
// the one the allocation already has while that one is valid.
func (a *API) joinCode(w http.ResponseWriter, r *http.Request, c caller) (int, any, *APIError) {
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
	// Records written before owners were recorded have none: anyone may
	// have their codes, as before.
	if !a.cfg.AnyClientJoinCode && alloc.Owner != "" && !secureEqual(alloc.Owner, ownerProof(c.client, r)) {
		return 0, nil, errKindForbidden.err("allocation " + id.String() + " was made by another client; only the client that made an allocation (from the same address, with the same token) gets its join code")
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
		Region: alloc.Region, Expires: now.Add(a.cfg.JoinCodeTTL.Std()), Relay: alloc.Relay,
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
func (a *API) join(w http.ResponseWriter, r *http.Request, c caller) (int, any, *APIError) {
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
	// The joiner's allocation is on the host's relay, which may be another
	// node's: every node sharing the store and the secrets opens it.
	host, port := a.cfg.PublicHost, a.cfg.PublicPort
	if h, p, ok := splitRelay(rec.Relay); ok {
		host, port = h, p
	}
	alloc, data, _, e := a.newAllocationOn(ctx, c, 1, rec.Region, net.JoinHostPort(host, strconv.Itoa(port)))
	if e != nil {
		return 0, nil, e
	}
	view := a.view(alloc, data)
	view.RelayServer = APIRelayServer{IPv4: host, Port: port}
	view.ServerEndpoints = []APIServerEndpoint{relayEndpoint(host, port)}
	view.HostConnectionData = rec.ConnectionData
	return http.StatusOK, AllocationData{Allocation: view}, nil
}
