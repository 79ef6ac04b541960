package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// APIClient talks to an allocations API (gamegate's relay_allocations, or
// any service with the same shapes), as a game would.
type APIClient struct {
	// Base is the API's base URL; paths /v1/... are appended to it.
	Base string
	// Token is sent as "Authorization: Bearer <token>".
	Token string
	// HTTP is the client used. Default: http.DefaultClient.
	HTTP *http.Client
}

func (c *APIClient) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Base, "/")+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e APIError
		if json.Unmarshal(data, &e) == nil && e.Status != 0 {
			return &e
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return json.Unmarshal(data, out)
}

// Allocate asks for an allocation for a host accepting maxConnections
// peers, in region (empty: the service's default).
func (c *APIClient) Allocate(ctx context.Context, maxConnections int, region string) (*APIAllocation, error) {
	req := AllocateRequest{MaxConnections: &maxConnections}
	if region != "" {
		req.Region = &region
	}
	var out APIResponse[AllocationData]
	if err := c.do(ctx, http.MethodPost, "/v1/allocate", req, &out); err != nil {
		return nil, err
	}
	return &out.Data.Allocation, nil
}

// JoinCode returns a join code for an allocation.
func (c *APIClient) JoinCode(ctx context.Context, allocationID string) (string, error) {
	var out APIResponse[JoinCodeData]
	if err := c.do(ctx, http.MethodPost, "/v1/joincode", JoinCodeRequest{AllocationID: &allocationID}, &out); err != nil {
		return "", err
	}
	return out.Data.JoinCode, nil
}

// Join exchanges a join code for an allocation of the joiner's own, with
// the host's connection data.
func (c *APIClient) Join(ctx context.Context, code string) (*APIAllocation, error) {
	var out APIResponse[AllocationData]
	if err := c.do(ctx, http.MethodPost, "/v1/join", JoinRequest{JoinCode: &code}, &out); err != nil {
		return nil, err
	}
	return &out.Data.Allocation, nil
}

// ClientConfigFor fills a ClientConfig from an allocation: its ID, key,
// connection data and the relay's UDP endpoint.
func ClientConfigFor(a *APIAllocation) (ClientConfig, error) {
	var cfg ClientConfig
	id, err := ParseAllocationID(a.AllocationID)
	if err != nil {
		return cfg, err
	}
	server := ""
	for _, e := range a.ServerEndpoints {
		if e.ConnectionType == "udp" {
			server = net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
			break
		}
	}
	if server == "" && a.RelayServer.IPv4 != "" {
		server = net.JoinHostPort(a.RelayServer.IPv4, strconv.Itoa(a.RelayServer.Port))
	}
	if server == "" {
		return cfg, errors.New("the allocation names no UDP relay endpoint")
	}
	cfg.Server, cfg.AllocationID, cfg.Key, cfg.ConnectionData = server, id, a.Key, a.ConnectionData
	return cfg, nil
}
