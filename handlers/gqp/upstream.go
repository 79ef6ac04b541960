package gqp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gamegate/gamegate/cache"
	"github.com/gamegate/gamegate/internal/ratelimit"
	wiregqp "github.com/gamegate/gamegate/wire/gqp"
)

// MaxUpstreamBody bounds an upstream's JSON answer.
const MaxUpstreamBody = 64 << 10

// HTTPCommand answers a GQP command from an HTTP upstream: the command
// becomes a GET of URL (its arguments as repeated "arg" query parameters),
// and the JSON object that comes back becomes records (see Records). Answers
// are cached for TTL and concurrent queries share one request. Requests to
// the upstream are limited by Limiter, whatever the queries' sources and
// arguments: GQP sources are not authenticated, and varying the arguments
// would otherwise make every spoofed query cost an upstream request.
type HTTPCommand struct {
	URL     string
	TTL     time.Duration
	Timeout time.Duration
	// Limiter admits upstream requests; nil admits all.
	Limiter *ratelimit.Limiter
	Client  *http.Client
	Cache   *cache.Results[string, []Record]
}

// allow takes one upstream request from the limiter.
func (c *HTTPCommand) allow() bool { return c.Limiter == nil || c.Limiter.Allow() }

var errUpstreamBusy = errors.New("upstream request rate limit reached")

// Record is a GQP record in a form that outlives a datagram.
type Record struct {
	Kind  wiregqp.RecordKind
	Label string
	Items []string
}

// Run implements Command.Run.
func (c *HTTPCommand) Run(ctx context.Context, args [][]byte, reply *wiregqp.Reply) wiregqp.Status {
	key := string(bytes.Join(args, []byte{0}))
	res, err := c.Cache.Get(ctx, key, cache.Policy{TTL: c.TTL, StaleIfError: 10 * c.TTL, NegativeTTL: c.TTL, LoadTimeout: c.Timeout},
		func(ctx context.Context) ([]Record, error) {
			if !c.allow() {
				return nil, errUpstreamBusy
			}
			return c.fetch(ctx, args)
		})
	if err != nil {
		reply.SetText([]byte(sanitize("upstream unavailable: " + err.Error())))
		return wiregqp.StatusUnavailable
	}
	for _, r := range res.Value {
		items := make([][]byte, len(r.Items))
		for i, it := range r.Items {
			items[i] = []byte(it)
		}
		switch r.Kind {
		case wiregqp.RecordPair:
			reply.AddPair([]byte(r.Label), items[0])
		case wiregqp.RecordLabeled:
			reply.AddLabeled([]byte(r.Label), items...)
		case wiregqp.RecordString:
			reply.AddString(items[0])
		default:
			reply.AddList(items...)
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
