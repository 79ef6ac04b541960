package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gamegate/gamegate/handlers/qos"
)

// Client fetches fleets from a discovery service the way game clients
// should: one request per fleet, the answer cached with its ETag, and the
// ETag sent back (If-None-Match) so an unchanged list costs a 304. It is safe
// for concurrent use.
type Client struct {
	// HTTP is the client used for requests. Default: http.DefaultClient.
	HTTP *http.Client
	// Header is added to every request (for example an API key).
	Header http.Header

	mu    sync.Mutex
	cache map[string]cachedFleet
}

type cachedFleet struct {
	etag    string
	servers []Server
}

// FetchResult is what Fetch learned.
type FetchResult struct {
	Servers     []Server
	ETag        string
	NotModified bool // the cached list was confirmed with a 304
}

// Fetch returns fleet's servers from the discovery service at base (for
// example "https://qos.example.com"; a path prefix is kept).
func (c *Client) Fetch(ctx context.Context, base, fleet string) (FetchResult, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil {
		return FetchResult{}, err
	}
	u = u.JoinPath("v1", "fleets", fleet, "servers")
	key := u.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, key, nil)
	if err != nil {
		return FetchResult{}, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	c.mu.Lock()
	cached, have := c.cache[key]
	c.mu.Unlock()
	if have && cached.etag != "" {
		req.Header.Set("If-None-Match", cached.etag)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return FetchResult{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxFleetFile+1))
	if err != nil {
		return FetchResult{}, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && have:
		return FetchResult{Servers: cached.servers, ETag: cached.etag, NotModified: true}, nil
	case resp.StatusCode != http.StatusOK:
		msg := strings.TrimSpace(string(body))
		var e struct {
			Message string `json:"error_message"`
		}
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		return FetchResult{}, fmt.Errorf("discovery %s: %s: %s", key, resp.Status, msg)
	case len(body) > MaxFleetFile:
		return FetchResult{}, errors.New("discovery answer too long")
	}
	servers, err := parseAnswer(body)
	if err != nil {
		return FetchResult{}, fmt.Errorf("discovery %s: %w", key, err)
	}
	etag := resp.Header.Get("ETag")
	c.mu.Lock()
	if c.cache == nil {
		c.cache = make(map[string]cachedFleet)
	}
	c.cache[key] = cachedFleet{etag: etag, servers: servers}
	c.mu.Unlock()
	return FetchResult{Servers: servers, ETag: etag}, nil
}

// parseAnswer reads a discovery answer leniently (unknown fields are
// ignored: the answer is another party's), keeping valid entries.
func parseAnswer(body []byte) ([]Server, error) {
	var doc struct {
		Servers []serverJSON `json:"servers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	var out []Server
	for i, j := range doc.Servers {
		if s, err := j.server(i); err == nil {
			out = append(out, s)
		}
	}
	return Dedupe(out), nil
}

// QoSTargets fetches each fleet's servers, once per fleet, as the targets
// of a QoS check (Server.QoSTarget).
func (c *Client) QoSTargets(ctx context.Context, base string, fleets []string, ipv6 bool) ([]qos.Target, error) {
	var targets []qos.Target
	for _, fleet := range fleets {
		res, err := c.Fetch(ctx, base, fleet)
		if err != nil {
			return nil, err
		}
		for _, s := range res.Servers {
			targets = append(targets, s.QoSTarget(ipv6))
		}
	}
	return targets, nil
}
