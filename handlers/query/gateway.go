package query

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Server is a game server the gateway may query.
type Server struct {
	Name     string
	Address  string // host:port
	Protocol Protocol
}

// Config is the behaviour of a Gateway.
type Config struct {
	// Servers by name.
	Servers map[string]Server
	// AdHoc is the protocol for targets given as host:port instead of a
	// name; nil refuses them.
	AdHoc Protocol
	// AllowTargets are the networks ad-hoc targets must resolve into
	// (every address of a name must be inside), so the gateway cannot be
	// used to send datagrams to arbitrary hosts.
	AllowTargets []netip.Prefix
	// TTL per command ("status" for the normalised status); DefaultTTL for
	// the others.
	TTL        map[string]time.Duration
	DefaultTTL time.Duration
	// StaleWhileRevalidate, StaleIfError and NegativeTTL: see cache.Policy.
	StaleWhileRevalidate time.Duration
	StaleIfError         time.Duration
	NegativeTTL          time.Duration
	// RateLimit is the most upstream queries per second per server, with
	// RateBurst at once; 0 is unlimited. Default RateBurst: one second's
	// worth.
	RateLimit float64
	RateBurst int
	// QueryTimeout bounds one upstream query, retries included.
	QueryTimeout time.Duration
	// MaxEntries bounds the result cache.
	MaxEntries int
	// MaxBatch bounds the servers × commands of one batch request, and
	// BatchConcurrency how many of them run at once.
	MaxBatch         int
	BatchConcurrency int
	// MaxBody bounds a batch request's body, in bytes.
	MaxBody int64
	// OnUpstream is called for every upstream query (metrics).
	OnUpstream func(server string)
	// Now gives the time. Default: time.Now.
	Now func() time.Time
}

// Gateway answers game-query HTTP requests.
type Gateway struct {
	cfg     Config
	results *cache.Results[resultKey, *answer]
	limit   ratelimit.Limit // per server
	clock   ratelimit.Clock

	mu       sync.Mutex
	limiters map[string]*ratelimit.AtomicState
}

type resultKey struct {
	target  string // server name, or protocol/address for ad-hoc targets
	command string // "status" for the normalised status
	args    string // arguments joined by NUL
}

// answer is a pre-serialised result: what every request for it is sent.
type answer struct {
	status int
	body   []byte
	etag   string
}

// NewGateway returns a gateway with cfg's defaults filled in, or an error
// naming a value it cannot use.
func NewGateway(cfg Config) (*Gateway, error) {
	if cfg.MaxBatch < 0 || cfg.BatchConcurrency < 0 || cfg.MaxBody < 0 || cfg.RateBurst < 0 || cfg.RateLimit < 0 {
		return nil, errors.New("query: negative limits in the gateway's configuration")
	}
	if cfg.DefaultTTL == 0 {
		cfg.DefaultTTL = 5 * time.Second
	}
	if cfg.QueryTimeout == 0 {
		cfg.QueryTimeout = 3 * time.Second
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 10000
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 100
	}
	if cfg.BatchConcurrency == 0 {
		cfg.BatchConcurrency = 16
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 64 << 10
	}
	if cfg.RateBurst == 0 {
		cfg.RateBurst = max(1, int(math.Ceil(cfg.RateLimit)))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := ratelimit.ValidateNamed("rate_limit", "rate_burst", cfg.RateLimit, cfg.RateBurst); err != nil {
		return nil, err
	}
	limit, _ := ratelimit.NewLimit(cfg.RateLimit, cfg.RateBurst)
	results, err := cache.NewResults[resultKey, *answer](cfg.MaxEntries, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Gateway{
		cfg:      cfg,
		results:  results,
		limit:    limit,
		clock:    ratelimit.NewClock(cfg.Now),
		limiters: make(map[string]*ratelimit.AtomicState),
	}, nil
}

// Stats returns the result cache's counters.
func (g *Gateway) Stats() cache.ResultStats { return g.results.Stats() }

// target is a resolved query target.
type target struct {
	key      string // cache and rate-limit key
	name     string // as the client named it
	address  string
	protocol Protocol
}

func (g *Gateway) resolve(ctx context.Context, name string) (*target, *Error) {
	if s, ok := g.cfg.Servers[name]; ok {
		return &target{key: "name/" + name, name: name, address: s.Address, protocol: s.Protocol}, nil
	}
	host, port, err := net.SplitHostPort(name)
	if err != nil {
		return nil, Errorf(http.StatusNotFound, "no game server is named %q", name)
	}
	if g.cfg.AdHoc == nil {
		return nil, Errorf(http.StatusForbidden, "only named game servers may be queried here, and none is named %q", name)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return nil, Errorf(http.StatusBadRequest, "bad port in %q", name)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, Errorf(http.StatusBadGateway, "cannot resolve %q", host)
	}
	for _, a := range addrs {
		if !g.allowed(a.Unmap()) {
			return nil, Errorf(http.StatusForbidden, "%s is outside the networks this gateway may query", a.Unmap())
		}
	}
	// Query the address that was checked, not the name again.
	addr := net.JoinHostPort(addrs[0].Unmap().String(), port)
	return &target{key: g.cfg.AdHoc.Name() + "/" + addr, name: name, address: addr, protocol: g.cfg.AdHoc}, nil
}

func (g *Gateway) allowed(a netip.Addr) bool {
	for _, p := range g.cfg.AllowTargets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (g *Gateway) policy(command string) cache.Policy {
	ttl, ok := g.cfg.TTL[command]
	if !ok {
		ttl = g.cfg.DefaultTTL
	}
	return cache.Policy{TTL: ttl, StaleWhileRevalidate: g.cfg.StaleWhileRevalidate,
		StaleIfError: g.cfg.StaleIfError, NegativeTTL: g.cfg.NegativeTTL, LoadTimeout: g.cfg.QueryTimeout}
}

// allow takes one upstream query for the server keyed key.
func (g *Gateway) allow(key string) bool {
	if g.limit.Unlimited() {
		return true
	}
	g.mu.Lock()
	st := g.limiters[key]
	if st == nil {
		if len(g.limiters) >= g.cfg.MaxEntries {
			clear(g.limiters) // bounded: forgetting limits only loosens them briefly
		}
		st = new(ratelimit.AtomicState)
		g.limiters[key] = st
	}
	g.mu.Unlock()
	return g.limit.AllowAtomic(st, g.clock.Now())
}

// result runs (or reuses) one query and returns its pre-serialised answer
// and how the cache served it.
func (g *Gateway) result(ctx context.Context, t *target, command string, args []string) (*answer, cache.Result[*answer], error) {
	key := resultKey{target: t.key, command: command, args: strings.Join(args, "\x00")}
	res, err := g.results.Get(ctx, key, g.policy(command), func(ctx context.Context) (*answer, error) {
		if !g.allow(t.key) {
			return nil, Errorf(http.StatusServiceUnavailable, "the query rate limit for %s is reached; try again shortly", t.name)
		}
		if g.cfg.OnUpstream != nil {
			g.cfg.OnUpstream(t.key)
		}
		var v any
		var err error
		if command == "status" {
			v, err = t.protocol.Status(ctx, t.address)
		} else {
			v, err = t.protocol.Command(ctx, t.address, command, args)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.HTTPStatus < 500 || errors.As(err, &e) && e.HTTPStatus == http.StatusNotImplemented {
				// The server answered, with a refusal: that is a result,
				// cached like any other.
				return errorAnswer(t.name, e), nil
			}
			return nil, err
		}
		body, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return &answer{status: http.StatusOK, body: body, etag: cache.ETag(body, true)}, nil
	})
	if err != nil {
		return nil, res, err
	}
	return res.Value, res, nil
}

func errorAnswer(server string, e *Error) *answer {
	doc := map[string]any{"error": e.Message, "server": server}
	if e.ProtocolStatus != 0 {
		doc["protocol_status"] = e.ProtocolStatus
	}
	body, _ := json.Marshal(doc)
	return &answer{status: e.HTTPStatus, body: body}
}

// ServeHTTP answers a request whose path, below the handler's prefix, is
//
//	GET  /{server}                    the server's normalised status
//	GET  /{server}/{command}?arg=…    a protocol command's answer
//	POST /                            a batch: {"servers": [...], "commands": [...]}
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request, path string) {
	path = strings.Trim(path, "/")
	if path == "" || path == "batch" {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			g.writeError(w, r, "", Errorf(http.StatusMethodNotAllowed, "a batch is a POST"))
			return
		}
		g.batch(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		g.writeError(w, r, "", Errorf(http.StatusMethodNotAllowed, "use GET or HEAD"))
		return
	}
	name, command, _ := strings.Cut(path, "/")
	if command == "" {
		command = "status"
	} else if strings.Contains(command, "/") {
		g.writeError(w, r, name, Errorf(http.StatusNotFound, "want /{server} or /{server}/{command}"))
		return
	}
	args := r.URL.Query()["arg"]
	t, e := g.resolve(r.Context(), name)
	if e != nil {
		g.writeError(w, r, name, e)
		return
	}
	a, res, err := g.result(r.Context(), t, command, args)
	if err != nil {
		var qe *Error
		if !errors.As(err, &qe) {
			qe = Errorf(HTTPStatus(err), "%v", err)
		}
		g.writeError(w, r, name, qe)
		return
	}
	g.write(w, r, a, res)
}

func (g *Gateway) write(w http.ResponseWriter, r *http.Request, a *answer, res cache.Result[*answer]) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Gamegate-Cache", cacheState(res))
	if age := g.cfg.Now().Sub(res.LoadedAt); age > 0 {
		h.Set("Age", strconv.FormatInt(int64(age/time.Second), 10))
	}
	if a.etag != "" {
		h.Set("ETag", a.etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && cache.IfNoneMatch(inm, a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

func cacheState(res cache.Result[*answer]) string {
	switch {
	case res.State == cache.Stale:
		return "stale"
	case res.Loaded:
		return "miss"
	case res.Shared:
		return "shared"
	}
	return "hit"
}

func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, server string, e *Error) {
	a := errorAnswer(server, e)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

// batchRequest lists servers and commands; every server is asked every
// command. A command is a name ("status" for the normalised status) or an
// object with a name and arguments.
type batchRequest struct {
	Servers  []string          `json:"servers"`
	Commands []json.RawMessage `json:"commands"`
}

type batchCommand struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}

type batchResult struct {
	Server  string          `json:"server"`
	Command string          `json:"command"`
	Args    []string        `json:"args,omitempty"`
	Status  int             `json:"status"`
	Cache   string          `json:"cache,omitempty"`
	Body    json.RawMessage `json:"body"`
}

func (g *Gateway) batch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBody))
	if err != nil {
		g.writeError(w, r, "", Errorf(http.StatusRequestEntityTooLarge, "the batch is larger than %d bytes", g.cfg.MaxBody))
		return
	}
	var req batchRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		g.writeError(w, r, "", Errorf(http.StatusBadRequest, "the batch is not valid JSON of the expected shape: %v", err))
		return
	}
	cmds := make([]batchCommand, 0, len(req.Commands))
	for _, raw := range req.Commands {
		var c batchCommand
		if err := json.Unmarshal(raw, &c.Name); err != nil {
			if err := json.Unmarshal(raw, &c); err != nil || c.Name == "" {
				g.writeError(w, r, "", Errorf(http.StatusBadRequest, "a command is a name or {\"name\": …, \"args\": […]}"))
				return
			}
		}
		cmds = append(cmds, c)
	}
	n := len(req.Servers) * len(cmds)
	switch {
	case n == 0:
		g.writeError(w, r, "", Errorf(http.StatusBadRequest, "the batch needs at least one server and one command"))
		return
	case n > g.cfg.MaxBatch:
		g.writeError(w, r, "", Errorf(http.StatusRequestEntityTooLarge, "the batch asks %d queries; at most %d are allowed", n, g.cfg.MaxBatch))
		return
	}
	results := make([]batchResult, n)
	sem := make(chan struct{}, g.cfg.BatchConcurrency)
	var wg sync.WaitGroup
	i := 0
	for _, s := range req.Servers {
		for _, c := range cmds {
			results[i] = batchResult{Server: s, Command: c.Name, Args: c.Args}
			wg.Add(1)
			go func(res *batchResult) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				g.batchOne(r.Context(), res)
			}(&results[i])
			i++
		}
	}
	wg.Wait()
	out, _ := json.Marshal(map[string]any{"results": results})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

func (g *Gateway) batchOne(ctx context.Context, res *batchResult) {
	t, e := g.resolve(ctx, res.Server)
	if e != nil {
		a := errorAnswer(res.Server, e)
		res.Status, res.Body = a.status, a.body
		return
	}
	a, cr, err := g.result(ctx, t, res.Command, res.Args)
	if err != nil {
		var qe *Error
		if !errors.As(err, &qe) {
			qe = Errorf(HTTPStatus(err), "%v", err)
		}
		a = errorAnswer(res.Server, qe)
	} else {
		res.Cache = cacheState(cr)
	}
	res.Status, res.Body = a.status, a.body
}
