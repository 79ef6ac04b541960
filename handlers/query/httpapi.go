package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/gamegate/gamegate/internal/bounds"
)

// HTTPAttempts are the options of a protocol that reads a game server's
// HTTP API (FiveM's info.json, Farming Simulator's stats feed): a
// protocol's Config embeds them, so the options are the same everywhere.
type HTTPAttempts struct {
	// attempt_timeout and retries, of each request.
	Attempts
	// Most bytes one answer's body may take, 1400 to 1048576; a longer
	// body is refused. Default: 65536.
	MaxResponseSize int `json:"max_response_size,omitempty"`
}

// Validate checks the options' ranges.
func (a *HTTPAttempts) Validate() error {
	return bounds.First(a.Attempts.Validate(),
		bounds.Int("max_response_size", a.MaxResponseSize, MinMaxResponseSize, MaxMaxResponseSize))
}

// HTTPAPI returns the HTTP client the options describe.
func (a *HTTPAttempts) HTTPAPI() *HTTPAPI {
	x := a.Exchange()
	return NewHTTPAPI(x.Timeout, x.Retries, a.MaxResponseSize)
}

// HTTPAPI asks a game server's HTTP API under the rules every query
// follows: it connects to the query address it is given and nowhere else
// (the address the gateway checked against allow_targets: the URL's host
// is never resolved again, no proxy of the environment is used and no
// redirect is followed), each attempt is bounded by a timeout and the
// body by a size.
type HTTPAPI struct {
	timeout time.Duration
	retries int
	maxBody int
	client  *http.Client
}

// NewHTTPAPI returns an HTTPAPI whose attempts wait at most timeout (0:
// 1s), tried 1+retries times (-1: once), reading at most maxBody bytes (0:
// DefaultMaxResponseSize).
func NewHTTPAPI(timeout time.Duration, retries, maxBody int) *HTTPAPI {
	if timeout <= 0 {
		timeout = time.Second
	}
	switch {
	case retries == 0:
		retries = 1
	case retries < 0:
		retries = 0
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxResponseSize
	}
	tr := &http.Transport{
		Proxy:                  nil, // never a proxy from the environment
		DialContext:            dialTarget,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 16 << 10,
		ResponseHeaderTimeout:  timeout,
	}
	return &HTTPAPI{timeout: timeout, retries: retries, maxBody: maxBody, client: &http.Client{
		Transport: tr,
		// A redirect is answered as what it is, an unusable answer: it
		// could point anywhere, inside the gateway's network too.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// targetKey carries the one address a request may connect to.
type targetKey struct{}

// dialTarget connects to the address the request was made for, and
// refuses any other.
func dialTarget(ctx context.Context, network, addr string) (net.Conn, error) {
	want, _ := ctx.Value(targetKey{}).(string)
	if want == "" || addr != want {
		return nil, errors.New("connection to an address other than the query target refused")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, want)
}

// ErrHTTPStatus is the error of an answer whose HTTP status is not 200.
var ErrHTTPStatus = errors.New("the server's HTTP API did not answer 200 OK")

// Get asks address (host:port, as checked) for path (with its query,
// which may hold a credential: it is never logged nor answered) and
// returns the body of its 200 answer and the time to the first answer.
// A body over the size bound, a status other than 200 and a redirect are
// errors from Upstream; a failure to connect or to be answered in time is
// one from Failure, without the URL.
func (h *HTTPAPI) Get(ctx context.Context, address, path string) ([]byte, time.Duration, error) {
	var last error
	for range 1 + h.retries {
		body, rtt, retry, err := h.attempt(ctx, address, path)
		if err == nil || !retry || ctx.Err() != nil {
			return body, rtt, err
		}
		last = err
	}
	return nil, 0, last
}

// attempt asks once; retry says whether another attempt may do better
// (no answer in time, a lost connection).
func (h *HTTPAPI) attempt(ctx context.Context, address, path string) (body []byte, rtt time.Duration, retry bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, targetKey{}, address), h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: address}).String()+path, nil)
	if err != nil {
		return nil, 0, false, Unreachable(address, errors.New("bad request URL"))
	}
	req.Header.Set("Accept", "application/json, application/xml, text/xml, */*")
	start := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may carry a credential
		}
		e := Failure(address, err)
		return nil, 0, e.Type != TypeRefused, e
	}
	defer resp.Body.Close()
	rtt = time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return nil, 0, false, Upstream(address, fmt.Errorf("%w (status %d)", ErrHTTPStatus, resp.StatusCode))
	}
	if resp.ContentLength > int64(h.maxBody) {
		return nil, 0, false, Upstream(address, ErrTooLarge)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, int64(h.maxBody)+1))
	switch {
	case err != nil:
		return nil, 0, true, Failure(address, err)
	case len(body) > h.maxBody:
		return nil, 0, false, Upstream(address, ErrTooLarge)
	}
	return body, rtt, false, nil
}
