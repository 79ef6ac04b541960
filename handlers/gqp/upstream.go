package gqp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// MaxUpstreamBody bounds an upstream's JSON answer.
const MaxUpstreamBody = 64 << 10

// Defaults of an HTTPCommand.
const (
	DefaultUpstreamTTL     = 2 * time.Second
	DefaultUpstreamTimeout = 2 * time.Second
	DefaultUpstreamRate    = 10
	// upstreamArgEntries bounds the cached answers to queries with
	// arguments, per command.
	upstreamArgEntries = 1024
)

// HTTPCommand answers a GQP command from an HTTP upstream: the command
// becomes a GET of URL (its arguments as repeated "arg" query parameters),
// and the JSON object that comes back becomes records (see Records). Answers
// are cached for TTL and concurrent queries share one request.
//
// Requests to the upstream are limited to Rate per second (Burst at once),
// whatever the queries' sources: GQP sources are not authenticated. Queries
// without arguments and queries with arguments have separate budgets and
// caches, so that varying the arguments (every spoofed query a new upstream
// request) can neither starve nor evict the argument-free answer.
type HTTPCommand struct {
	URL string
	// TTL is how long an answer is reused. Default: DefaultUpstreamTTL.
	TTL time.Duration
	// Timeout bounds one upstream request. Default: DefaultUpstreamTimeout.
	Timeout time.Duration
	// Rate is the most upstream requests per second of each budget.
	// Default: DefaultUpstreamRate.
	Rate float64
	// Burst is how many requests of each budget may go at once. Default:
	// one second of Rate, rounded up (ratelimit.DefaultBurst).
	Burst int
	// Client makes the requests. Default: one with Timeout.
	Client *http.Client
	// Log is told why an upstream request failed; the GQP client is told in
	// words only (never the URL or a socket error). Default: nothing.
	Log func(error)

	once            sync.Once
	plain, args     *cache.Results[string, CachedAnswer]
	limit           ratelimit.Limit
	clock           ratelimit.Clock
	plainBudget     ratelimit.AtomicState
	argumentsBudget ratelimit.AtomicState
}

func (c *HTTPCommand) init() {
	c.TTL = cmp.Or(c.TTL, DefaultUpstreamTTL)
	c.Timeout = cmp.Or(c.Timeout, DefaultUpstreamTimeout)
	c.Rate = cmp.Or(c.Rate, DefaultUpstreamRate)
	c.Burst = cmp.Or(c.Burst, ratelimit.DefaultBurst(c.Rate))
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	var err error
	if c.limit, err = ratelimit.NewLimit(c.Rate, c.Burst); err != nil {
		// Refused by the module's Validate; never unlimited.
		c.limit, _ = ratelimit.NewLimit(DefaultUpstreamRate, DefaultUpstreamRate)
	}
	c.clock = ratelimit.NewClock(nil)
	// Constant sizes: these cannot fail.
	c.plain, _ = cache.NewResults[string, CachedAnswer](1, nil)
	c.args, _ = cache.NewResults[string, CachedAnswer](upstreamArgEntries, nil)
}

// Close ends the command's upstream requests: those running are
// cancelled and none starts after it (their queries get "upstream
// unavailable"). The requests are shared by every query asking, so no
// query's cancellation ends them; Close is for the owner that stops using
// the command, such as a configuration being unloaded.
func (c *HTTPCommand) Close() {
	c.once.Do(c.init)
	c.plain.Close()
	c.args.Close()
}

var errUpstreamBusy = errors.New("upstream request rate limit reached")

// Record is a GQP record in a form that outlives a datagram.
type Record struct {
	Kind  wiregqp.RecordKind
	Label string
	Items []string
}

// Run implements Command.Run.
func (c *HTTPCommand) Run(ctx context.Context, args [][]byte, reply *wiregqp.Reply) wiregqp.Status {
	c.once.Do(c.init)
	results, budget := c.budget(args)
	res, err := results.Get(ctx, cacheKey(args), c.policy(), func(ctx context.Context) (CachedAnswer, error) {
		if !c.limit.AllowAtomic(budget, c.clock.Now()) {
			return CachedAnswer{}, errUpstreamBusy
		}
		return c.load(ctx, args)
	})
	return answerOf(res.Value, err).Fill(reply)
}

// Cached implements Command.Cached: a fresh or failed answer in the cache
// answers at once, as does a spent upstream budget (status 31). Otherwise
// the upstream request starts in the background, within the budget, and
// Cached reports false: a Run called later for the same arguments waits
// for that request rather than starting another.
func (c *HTTPCommand) Cached(args [][]byte) (CachedAnswer, bool) {
	c.once.Do(c.init)
	results, budget := c.budget(args)
	key, p := cacheKey(args), c.policy()
	res, ok, loading := results.Peek(key, p)
	switch {
	case ok:
		return answerOf(res.Value, res.Err), true
	case loading:
		return CachedAnswer{}, false // Run will wait for the request that runs
	}
	// The budget is spent before a request starts, so however many
	// queries miss, requests (and their goroutines) start at most at
	// the budget's rate.
	if !c.limit.AllowAtomic(budget, c.clock.Now()) {
		return busyAnswer, true
	}
	owned := make([][]byte, len(args)) // args alias the caller's datagram
	for i, a := range args {
		owned[i] = bytes.Clone(a)
	}
	res, err := results.Get(ended, key, p, func(ctx context.Context) (CachedAnswer, error) { return c.load(ctx, owned) })
	if res.State == 0 {
		return CachedAnswer{}, false // the request runs; nothing waits for it here
	}
	return answerOf(res.Value, err), true
}

// load asks the upstream and makes its records the answer the cache keeps.
func (c *HTTPCommand) load(ctx context.Context, args [][]byte) (CachedAnswer, error) {
	recs, err := c.fetch(ctx, args)
	if err != nil {
		if c.Log != nil {
			c.Log(err)
		}
		return CachedAnswer{}, err
	}
	return recordsAnswer(recs), nil
}

// recordsAnswer is the answer recs make. It is made once, when they are
// loaded, and cached whole: a hit then costs neither a walk of the records
// (for Size) nor an allocation (for Fill), whose byte slices are made here.
func recordsAnswer(recs []Record) CachedAnswer {
	prepared := make([]wiregqp.Record, len(recs))
	size := 0
	for i, rec := range recs {
		p := &prepared[i]
		p.Kind, p.Label, p.Items = rec.Kind, []byte(rec.Label), make([][]byte, len(rec.Items))
		size += len(rec.Label)
		for j, it := range rec.Items {
			p.Items[j] = []byte(it)
			size += len(it)
		}
	}
	return CachedAnswer{Fill: func(r *wiregqp.Reply) wiregqp.Status { return fillRecords(prepared, r) }, Size: size}
}

// The answers to a failed upstream request: words only, since the error
// may hold the upstream's URL and socket errors (load logs them).
var (
	unavailableAnswer = textAnswer(wiregqp.StatusUnavailable, "upstream unavailable")
	busyAnswer        = textAnswer(wiregqp.StatusUnavailable, "upstream busy: try again shortly")
)

// textAnswer is the answer status with text, whose bytes every reply shares.
func textAnswer(status wiregqp.Status, text string) CachedAnswer {
	b := []byte(text)
	return CachedAnswer{
		Fill: func(r *wiregqp.Reply) wiregqp.Status {
			r.SetText(b)
			return status
		},
		Size: len(b),
	}
}

// answerOf is the answer of a cached value or error.
func answerOf(a CachedAnswer, err error) CachedAnswer {
	switch {
	case errors.Is(err, errUpstreamBusy):
		return busyAnswer
	case err != nil || a.Fill == nil:
		return unavailableAnswer
	}
	return a
}

// ended is a context that has ended: a Get with it never waits.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// budget returns the cache and upstream budget of queries with args.
func (c *HTTPCommand) budget(args [][]byte) (*cache.Results[string, CachedAnswer], *ratelimit.AtomicState) {
	if len(args) > 0 {
		return c.args, &c.argumentsBudget
	}
	return c.plain, &c.plainBudget
}

func cacheKey(args [][]byte) string { return string(bytes.Join(args, []byte{0})) }

func (c *HTTPCommand) policy() cache.Policy {
	return cache.Policy{TTL: c.TTL, StaleIfError: 10 * c.TTL, NegativeTTL: c.TTL, LoadTimeout: c.Timeout}
}

// fillRecords fills reply with recs, whose byte slices it aliases, and
// returns its status.
func fillRecords(recs []wiregqp.Record, reply *wiregqp.Reply) wiregqp.Status {
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case wiregqp.RecordPair:
			reply.AddPair(r.Label, r.Items[0])
		case wiregqp.RecordLabeled:
			reply.AddLabeled(r.Label, r.Items...)
		case wiregqp.RecordString:
			reply.AddString(r.Items[0])
		default:
			reply.AddList(r.Items...)
		}
	}
	return wiregqp.StatusOK
}

func (c *HTTPCommand) fetch(ctx context.Context, args [][]byte) ([]Record, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, err
	}
	if len(args) > 0 {
		q := u.Query()
		for _, a := range args {
			q.Add("arg", string(a))
		}
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxUpstreamBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxUpstreamBody {
		return nil, errors.New("upstream answer too long")
	}
	return Records(body)
}

// Bounds on what an upstream's JSON may become, so that the records always
// encode: at most MaxRecords records of at most MaxItems items, and about
// 60 KiB in all (a GQP response is at most 64 KiB).
const maxRecordBytes = 60 << 10

// Records converts a JSON object into GQP records, keys in sorted order:
// a scalar becomes a name/value pair; an array becomes a labeled list (an
// object element is represented by its "name" field if it has one, else by
// its JSON); a nested object becomes pairs named "key.field". Control
// characters in strings become spaces, since GQP strings cannot carry them.
func Records(body []byte) ([]Record, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("upstream answer is not a JSON object: %w", err)
	}
	var out []Record
	var walk func(prefix string, m map[string]any, depth int)
	walk = func(prefix string, m map[string]any, depth int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := sanitize(prefix + k)
			switch v := m[k].(type) {
			case []any:
				items := make([]string, len(v))
				for i, e := range v {
					items[i] = itemText(e)
				}
				out = append(out, Record{Kind: wiregqp.RecordLabeled, Label: name, Items: items})
			case map[string]any:
				if depth < 1 {
					walk(name+".", v, depth+1)
				} else {
					out = append(out, Record{Kind: wiregqp.RecordPair, Label: name, Items: []string{itemText(v)}})
				}
			default:
				out = append(out, Record{Kind: wiregqp.RecordPair, Label: name, Items: []string{itemText(v)}})
			}
		}
	}
	walk("", obj, 0)
	if len(out) > wiregqp.MaxRecords {
		return nil, fmt.Errorf("upstream answer has %d fields; at most %d fit a reply", len(out), wiregqp.MaxRecords)
	}
	size := 0
	for _, r := range out {
		if len(r.Items) > wiregqp.MaxItems {
			return nil, fmt.Errorf("upstream field %q has %d items; at most %d fit a record", r.Label, len(r.Items), wiregqp.MaxItems)
		}
		size += len(r.Label) + 2
		for _, it := range r.Items {
			size += len(it) + 1
		}
	}
	if size > maxRecordBytes {
		return nil, fmt.Errorf("upstream answer makes %d bytes of records; at most %d fit a reply", size, maxRecordBytes)
	}
	return out, nil
}

func itemText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return sanitize(v)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		if n, ok := v["name"].(string); ok {
			return sanitize(n)
		}
	}
	b, _ := json.Marshal(v)
	return sanitize(string(b))
}

// sanitize replaces the bytes a GQP string cannot carry with spaces.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7F {
			b[i] = ' '
		}
	}
	return string(b)
}

// Pair is a name/value record of a static reply.
type Pair struct {
	// The record's name.
	Name string `json:"name"`
	// Its value.
	Value string `json:"value"`
}

// StaticReply returns the Command.Run and Command.Cached of a command that
// answers pairs, in order, to every query. The answer is made once, here,
// with its size: AnswerNow then fills it without building it, and refuses
// it unbuilt to a source that may not receive it, as it does a cached
// upstream answer.
func StaticReply(pairs []Pair) (run func(context.Context, [][]byte, *wiregqp.Reply) wiregqp.Status, cached func([][]byte) (CachedAnswer, bool)) {
	recs := make([]Record, len(pairs))
	for i, p := range pairs {
		recs[i] = Record{Kind: wiregqp.RecordPair, Label: p.Name, Items: []string{p.Value}}
	}
	answer := recordsAnswer(recs)
	run = func(_ context.Context, _ [][]byte, r *wiregqp.Reply) wiregqp.Status { return answer.Fill(r) }
	cached = func([][]byte) (CachedAnswer, bool) { return answer, true }
	return run, cached
}
