package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/internal/clientaddr"
	"github.com/gamegate/gamegate/internal/netaddr"
	"github.com/gamegate/gamegate/internal/ratelimit"
)

// Gateway answers game-query HTTP requests.
type Gateway struct {
	cfg          Config
	allowTargets []netip.Prefix // cfg.AllowTargets
	// plain holds named servers' status and argument-free commands, whose
	// keys the configuration bounds; other holds what clients can vary.
	plain, other *cache.Results[resultKey, *answer]

	// Upstream budgets: named servers' are fixed by the configuration;
	// ad-hoc targets', which clients choose, live in a bounded table of
	// their own, so filling it cannot touch the named servers' budgets.
	upstreamLimit ratelimit.Limit
	upstreamClock ratelimit.Clock
	adHocBudgets  *ratelimit.Table[adHocBudget]

	// named are the configured servers, resolved once, each with its
	// budgets and the loads of its argument-free commands, so that a
	// cached answer costs no allocation.
	named map[string]*target

	clientLimit ratelimit.Limit
	clients     *ratelimit.Table[netip.Prefix] // ad-hoc requests per client
	adHoc       *slots                         // ad-hoc upstream work running

	batchLimit   ratelimit.Limit
	batchClients *ratelimit.Table[netip.Prefix] // batches per client network
}

// budgets are a target's two upstream budgets: one for the status and
// argument-free commands, one for commands with arguments.
type budgets [2]ratelimit.AtomicState

const (
	plainBudget = 0
	argsBudget  = 1
)

// adHocBudget keys one budget of one ad-hoc target.
type adHocBudget struct {
	target string
	which  int
}

type resultKey struct {
	target  string // server name, or protocol/address for ad-hoc targets
	command string // "status" for the normalised status
	args    string // argsKey of the arguments
}

// argsKey encodes an argument list so that no two lists share it: each
// argument is preceded by its length, so neither a separator inside an
// argument nor a list of one empty argument can pass for another list.
func argsKey(args []string) string {
	n := 0
	for _, a := range args {
		n += len(a) + 6
	}
	b := make([]byte, 0, n)
	for _, a := range args {
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, ':')
		b = append(b, a...)
	}
	return string(b)
}

// answer is a pre-serialised result: what every request for it is sent,
// with its header values formatted once.
type answer struct {
	status int
	body   []byte
	etag   string
	length string // Content-Length
	// value is the normalised status a status answer was made of, for
	// server lists (never changed once cached).
	value *Status
}

func newAnswer(status int, body []byte, etag string) *answer {
	return &answer{status: status, body: body, etag: etag, length: strconv.Itoa(len(body))}
}

// NewGateway returns a gateway with cfg's defaults filled in, or the error
// of cfg.Validate but for AllowTargets' entries, of which those that do
// not parse are left out (Validate refuses them; left out, they allow
// nothing).
func NewGateway(cfg Config) (*Gateway, error) {
	if err := cfg.validateOptions(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	var allowTargets []netip.Prefix
	for _, a := range cfg.AllowTargets {
		if p, err := netaddr.ParsePrefix(a); err == nil {
			allowTargets = append(allowTargets, p)
		}
	}
	plain, err := cache.NewResults[resultKey, *answer](cfg.MaxEntries, cfg.Now)
	if err != nil {
		return nil, err
	}
	other, err := cache.NewResults[resultKey, *answer](cfg.MaxEntries, cfg.Now)
	if err != nil {
		return nil, err
	}
	upstreamLimit, err := ratelimit.NewLimit(cfg.UpstreamRate, cfg.UpstreamBurst)
	if err != nil {
		return nil, fmt.Errorf("query: rate limit: %w", err)
	}
	clientLimit, err := ratelimit.NewLimit(cfg.AdHocRate, cfg.AdHocBurst)
	if err != nil {
		return nil, fmt.Errorf("query: ad-hoc rate: %w", err)
	}
	batchLimit, err := ratelimit.NewLimit(cfg.BatchRate, cfg.BatchBurst)
	if err != nil {
		return nil, fmt.Errorf("query: batch rate: %w", err)
	}
	clock := ratelimit.NewClock(cfg.Now)
	g := &Gateway{
		cfg:           cfg,
		allowTargets:  allowTargets,
		plain:         plain,
		other:         other,
		upstreamLimit: upstreamLimit,
		upstreamClock: clock,
		named:         make(map[string]*target, len(cfg.Servers)),
		adHocBudgets:  ratelimit.NewTable[adHocBudget](cfg.MaxEntries, clock),
		clientLimit:   clientLimit,
		batchLimit:    batchLimit,
		batchClients:  ratelimit.NewTable[netip.Prefix](cfg.MaxEntries, clock),
		clients:       ratelimit.NewTable[netip.Prefix](cfg.MaxEntries, clock),
		adHoc:         newSlots(cfg.MaxAdHoc, cfg.MaxAdHocPerNetwork),
	}
	for name, s := range cfg.Servers {
		cmds := s.Commands
		if cmds == nil {
			cmds = ReadOnlyCommands(s.Protocol)
		}
		t := &target{key: "name/" + name, name: name, address: s.Address, protocol: s.Protocol, named: true, commands: cmds,
			budgets: new(budgets), loads: make(map[string]func(context.Context) (*answer, error), len(cmds)+1)}
		for _, c := range append([]string{"status"}, cmds...) {
			t.loads[c] = g.loader(t, c, nil)
		}
		g.named[name] = t
	}
	return g, nil
}

// Stats returns the result caches' counters, summed.
func (g *Gateway) Stats() cache.ResultStats {
	a, b := g.plain.Stats(), g.other.Stats()
	return cache.ResultStats{Hits: a.Hits + b.Hits, StaleHits: a.StaleHits + b.StaleHits, NegativeHits: a.NegativeHits + b.NegativeHits,
		Misses: a.Misses + b.Misses, SharedWaits: a.SharedWaits + b.SharedWaits, Loads: a.Loads + b.Loads,
		LoadErrors: a.LoadErrors + b.LoadErrors, Evictions: a.Evictions + b.Evictions}
}

// target is a resolved query target.
type target struct {
	key      string // cache and rate-limit key
	name     string // as the client named it
	address  string
	protocol Protocol
	named    bool
	commands []string // allowed besides status
	// network is the client network an ad-hoc target was asked by: its
	// upstream work takes that network's slots.
	network netip.Prefix
	// A named server's upstream budgets, and the loads of its
	// argument-free commands by command.
	budgets *budgets
	loads   map[string]func(context.Context) (*answer, error)
}

func (t *target) allows(command string) bool {
	return command == "status" || slices.Contains(t.commands, command)
}

// request answers one question (server × command × arguments) from the
// client that client gives (asked only for ad-hoc targets), with the
// gateway's limits applied.
func (g *Gateway) request(ctx context.Context, client func() netip.Addr, name, command string, args []string) (*answer, cache.Result[*answer], *Error) {
	var none cache.Result[*answer]
	var network netip.Prefix
	if _, named := g.named[name]; !named && (g.cfg.AdHoc != nil || g.cfg.Games != nil) {
		if _, _, err := net.SplitHostPort(name); err == nil || g.cfg.Games != nil && strings.Contains(name, "/") {
			// Bounded per client before anything else; the upstream
			// work (name lookup, query) takes slots of its own.
			ip := client()
			if ok, wait := g.clients.Allow(g.clientLimit, clientaddr.Key(ip, g.cfg.ClientIPv6Prefix)); !ok {
				return nil, none, &Error{HTTPStatus: http.StatusTooManyRequests, Type: TypeLimited, RetryAfter: wait,
					Message: "too many ad-hoc queries from this client; try again shortly"}
			}
			network = clientaddr.Network(ip, 0, 0)
		}
	}
	t, e := g.resolve(ctx, name, network)
	if e != nil {
		return nil, none, e
	}
	if !t.allows(command) {
		return nil, none, Errorf(http.StatusForbidden, "the command %q may not be sent to %s from here", command, t.name)
	}
	a, res, err := g.result(ctx, t, command, args)
	if err != nil {
		var qe *Error
		if !errors.As(err, &qe) {
			// Logged where it happened; the client gets its cause in words.
			qe = Failure(t.name, err)
		}
		return nil, res, qe
	}
	return a, res, nil
}

// takeAdHoc takes a slot of ad-hoc upstream work for network; give it back
// with g.adHoc.give(network).
func (g *Gateway) takeAdHoc(network netip.Prefix) *Error {
	ok, own := g.adHoc.take(network)
	switch {
	case ok:
		return nil
	case own:
		return &Error{HTTPStatus: http.StatusTooManyRequests, Type: TypeLimited, RetryAfter: time.Second,
			Message: "too many ad-hoc queries at once from this network; try again shortly"}
	}
	return &Error{HTTPStatus: http.StatusServiceUnavailable, Type: TypeLimited, RetryAfter: time.Second,
		Message: "too many ad-hoc queries at once; try again shortly"}
}

// resolve finds the target name means; an ad-hoc target is asked for by
// network.
func (g *Gateway) resolve(ctx context.Context, name string, network netip.Prefix) (*target, *Error) {
	if t, ok := g.named[name]; ok {
		return t, nil
	}
	protocol := g.cfg.AdHoc
	var host string
	var port uint16
	if id, address, byGame := strings.Cut(name, "/"); byGame && g.cfg.Games != nil {
		var e *Error
		if protocol, host, port, e = g.gameTarget(id, address); e != nil {
			return nil, e
		}
	} else {
		var err error
		host, port, err = netaddr.SplitHostPort(name)
		if errors.Is(err, netaddr.ErrNotHostPort) {
			return nil, Errorf(http.StatusNotFound, "no game server is named %q", name)
		}
		if protocol == nil {
			return nil, Errorf(http.StatusForbidden, "only named game servers may be queried here, and none is named %q", name)
		}
		if err != nil {
			return nil, Errorf(http.StatusBadRequest, "bad address %q: %v", name, err)
		}
	}
	if _, err := netip.ParseAddr(host); err != nil {
		// A name lookup is upstream work too.
		if e := g.takeAdHoc(network); e != nil {
			return nil, e
		}
		defer g.adHoc.give(network)
	}
	addrs, err := netaddr.LookupHost(ctx, host)
	if err != nil {
		e := &Error{HTTPStatus: http.StatusBadGateway, Type: TypeUnresolved,
			Message: fmt.Sprintf("cannot resolve %q", host), Detail: err}
		if g.cfg.Log != nil {
			g.cfg.Log(name, err)
		}
		return nil, e
	}
	for _, a := range addrs {
		if !g.allowed(a) {
			if _, err := netip.ParseAddr(host); err != nil {
				// Answered as a name that does not resolve: any other
				// answer would tell a client which names exist inside
				// the gateway's network, or what they resolve to. The
				// log says why.
				detail := fmt.Errorf("%s resolves to %s, outside allow_targets", host, a)
				if g.cfg.Log != nil {
					g.cfg.Log(name, detail)
				}
				return nil, &Error{HTTPStatus: http.StatusBadGateway, Type: TypeUnresolved,
					Message: fmt.Sprintf("cannot resolve %q", host), Detail: detail}
			}
			return nil, Errorf(http.StatusForbidden, "%s is outside the networks this gateway may query", a)
		}
	}
	// Query the address that was checked, not the name again, and key the
	// target by the address and port as parsed: every spelling of one
	// target ("7777", "07777") shares its cache entries and its budget.
	addr := netip.AddrPortFrom(addrs[0], port).String()
	// Its answers are cached and shared under that key, so they name it by
	// the address too, never by one client's spelling.
	return &target{key: protocol.Name() + "/" + addr, name: addr, address: addr, protocol: protocol,
		commands: ReadOnlyCommands(protocol), network: network}, nil
}

// gameTarget resolves the ad-hoc target address (host or host:port) of
// game id: its protocol, and the host and port to query.
func (g *Gateway) gameTarget(id, address string) (Protocol, string, uint16, *Error) {
	gm, e := g.cfg.Games(id)
	if e != nil {
		return nil, "", 0, e
	}
	host, given, err := netaddr.SplitHostOptionalPort(address) // no port: the game's
	if err != nil {
		return nil, "", 0, Errorf(http.StatusBadRequest, "bad address %q: %v", address, err)
	}
	port, err := gm.QueryPort(int(given))
	if err != nil {
		return nil, "", 0, Errorf(http.StatusBadRequest, "%s: %v", id, err)
	}
	return gm.Protocol, host, uint16(port), nil
}

func (g *Gateway) allowed(a netip.Addr) bool {
	for _, p := range g.allowTargets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (g *Gateway) policy(command string) cache.Policy {
	ttl := g.cfg.TTL[command]
	if ttl == 0 { // not named, or 0 (JSON's zero, as everywhere, the default)
		ttl = g.cfg.DefaultTTL
	}
	return cache.Policy{TTL: ttl.Std(), StaleWhileRevalidate: g.cfg.StaleWhileRevalidate.Std(),
		StaleIfError: g.cfg.StaleIfError.Std(), NegativeTTL: g.cfg.NegativeTTL.Std(), LoadTimeout: g.cfg.QueryTimeout.Std()}
}

// allowUpstream takes one upstream query from t's budget (argsBudget or
// plainBudget); when refused it says how long until one would be allowed.
func (g *Gateway) allowUpstream(t *target, which int) (bool, time.Duration) {
	if g.upstreamLimit.Unlimited() {
		return true, 0
	}
	if !t.named {
		return g.adHocBudgets.Allow(g.upstreamLimit, adHocBudget{t.key, which})
	}
	st := &t.budgets[which]
	now := g.upstreamClock.Now()
	if g.upstreamLimit.AllowAtomic(st, now) {
		return true, 0
	}
	return false, g.upstreamLimit.Wait(st.Load(), now)
}

// result runs (or reuses) one query and returns its pre-serialised answer
// and how the cache served it.
func (g *Gateway) result(ctx context.Context, t *target, command string, args []string) (*answer, cache.Result[*answer], error) {
	key := resultKey{target: t.key, command: command}
	results, load := g.other, t.loads[command]
	if len(args) > 0 || load == nil {
		key.args = argsKey(args)
		load = g.loader(t, command, args)
	}
	if len(args) == 0 && t.named {
		results = g.plain
	}
	res, err := results.Get(ctx, key, g.policy(command), load)
	if err != nil {
		return nil, res, err
	}
	return res.Value, res, nil
}

// loader returns the load of one query: the upstream budget taken, the
// protocol asked, its answer serialised.
func (g *Gateway) loader(t *target, command string, args []string) func(context.Context) (*answer, error) {
	budget := argsBudget
	if len(args) == 0 {
		budget = plainBudget
	}
	return func(ctx context.Context) (*answer, error) {
		if !t.named {
			// Only the load holds a slot: requests answered from the
			// cache, or waiting for this load, hold none. A refusal says
			// nothing about the target, so it is not cached.
			if e := g.takeAdHoc(t.network); e != nil {
				return nil, cache.Uncached(e)
			}
			defer g.adHoc.give(t.network)
		}
		if ok, wait := g.allowUpstream(t, budget); !ok {
			return nil, &Error{HTTPStatus: http.StatusServiceUnavailable, Type: TypeLimited, RetryAfter: wait,
				Message: "the query rate limit for " + t.name + " is reached; try again shortly"}
		}
		var v any
		var err error
		start := time.Now()
		if command == "status" {
			v, err = t.protocol.Status(ctx, t.address)
		} else {
			v, err = t.protocol.Command(ctx, t.address, command, args)
		}
		if g.cfg.OnUpstream != nil {
			server := ""
			if t.named {
				server = t.name
			}
			g.cfg.OnUpstream(server, time.Since(start))
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.HTTPStatus < 500 || errors.As(err, &e) && e.HTTPStatus == http.StatusNotImplemented {
				// The server answered, with a refusal: that is a result,
				// cached like any other.
				return errorAnswer(t.name, e), nil
			}
			if g.cfg.Log != nil {
				switch {
				case e == nil:
					g.cfg.Log(t.name, err)
				case e.Detail != nil:
					g.cfg.Log(t.name, e.Detail)
				}
			}
			return nil, err
		}
		body, err := json.Marshal(v)
		if err != nil {
			// A value JSON cannot carry (a NaN or an infinity a protocol
			// passed on) is the server's answer at fault.
			e := Upstream(t.address, errors.New("it holds a value JSON cannot carry"))
			e.Detail = fmt.Errorf("%s: encoding its answer: %w", t.address, err)
			if g.cfg.Log != nil {
				g.cfg.Log(t.name, e.Detail)
			}
			return nil, e
		}
		a := newAnswer(http.StatusOK, body, cache.ETag(body, true))
		a.value, _ = v.(*Status)
		return a, nil
	}
}

// Listed is a configured server as a server list shows it.
type Listed struct {
	Name, Address, Region string
	Protocol              string // the protocol's name
	Game                  string // Server.Game
}

// Listed appends the configured servers to dst, sorted by name.
func (g *Gateway) Listed(dst []Listed) []Listed {
	start := len(dst)
	for name, t := range g.named {
		dst = append(dst, Listed{Name: name, Address: t.address, Region: g.cfg.Servers[name].Region, Protocol: t.protocol.Name(),
			Game: g.cfg.Servers[name].Game})
	}
	slices.SortFunc(dst[start:], func(a, b Listed) int { return strings.Compare(a.Name, b.Name) })
	return dst
}

// CachedStatus returns the configured server name's status as a GET of
// it would be answered from the cache now, without querying: ok is false
// when there is none (nothing cached, a failure cached, or a value a GET
// would have to load or refresh first). loading reports that a query of
// it is running. until is when the clock alone changes the answer (zero:
// only a query's end, which changes Generation, does; see
// cache.Result.Until).
func (g *Gateway) CachedStatus(name string) (st *Status, until time.Time, ok, loading bool) {
	t, named := g.named[name]
	if !named {
		return nil, time.Time{}, false, false
	}
	res, ok, loading := g.plain.Peek(resultKey{target: t.key, command: "status"}, g.policy("status"))
	if !ok || res.Err != nil || res.Value == nil || res.Value.value == nil {
		return nil, res.Until, false, loading
	}
	return res.Value.value, res.Until, true, loading
}

// Generation changes whenever CachedStatus may answer otherwise than by
// the clock: a query ended, a result was dropped.
func (g *Gateway) Generation() uint64 { return g.plain.Generation() }

// LoadStatus brings the configured server name's status into the cache
// as a GET of it does (its query rate and timeout), and returns once it
// is there or ctx ends.
func (g *Gateway) LoadStatus(ctx context.Context, name string) {
	if t, named := g.named[name]; named {
		_, _, _ = g.result(ctx, t, "status", nil)
	}
}

// Close ends the queries running and starts no more: for a gateway whose
// configuration is unloaded while lists may still ask it.
func (g *Gateway) Close() {
	g.plain.Close()
	g.other.Close()
}
