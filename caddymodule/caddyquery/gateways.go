package caddyquery

import (
	"slices"
	"sync"

	"github.com/caddyserver/caddy/v2"

	"github.com/gamegate/gamegate/handlers/query"
)

// The gateway registry: each game_query handler publishes its gateway
// under its name, and the server lists (server_list, server_browser, in
// caddymaster) read the gateways under the name they are given. It is the
// one way another family reaches game_query's state.

// gateways hold the gateways of the game_query handlers by name. Handlers
// of either kind may be provisioned first.
var gateways = caddy.NewUsagePool()

// GatewaySet is the gateways of the running configuration(s) under one
// name, oldest first: while a reload runs, the old configuration's and
// the new one's.
type GatewaySet struct {
	mu       sync.Mutex
	gateways []*query.Gateway
}

// Destruct does nothing: a set holds no resources of its own.
func (*GatewaySet) Destruct() error { return nil }

// LoadGateways returns the set under name, made empty if no handler has
// published one yet; the caller releases it with ReleaseGateways(name).
func LoadGateways(name string) (*GatewaySet, error) {
	v, _, err := gateways.LoadOrNew(name, func() (caddy.Destructor, error) { return new(GatewaySet), nil })
	if err != nil {
		return nil, err
	}
	return v.(*GatewaySet), nil
}

// ReleaseGateways releases a set LoadGateways returned.
func ReleaseGateways(name string) error {
	_, err := gateways.Delete(name)
	return err
}

func (s *GatewaySet) add(g *query.Gateway) {
	s.mu.Lock()
	s.gateways = append(s.gateways, g)
	s.mu.Unlock()
}

func (s *GatewaySet) remove(g *query.Gateway) {
	s.mu.Lock()
	s.gateways = slices.DeleteFunc(s.gateways, func(x *query.Gateway) bool { return x == g })
	s.mu.Unlock()
}

// NewestFirst returns the gateways, the newest first: a server that two
// configurations name is listed from the newer one.
func (s *GatewaySet) NewestFirst() []*query.Gateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.gateways)
	slices.Reverse(out)
	return out
}
