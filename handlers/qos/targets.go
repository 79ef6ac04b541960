package qos

import (
	"context"
	"fmt"
	"strings"

	"github.com/gamegate/gamegate/internal/netaddr"
)

// ParseTargets reads QoS servers given as "[region=]host:port", resolving
// each host to its first address; a value without a region names its
// region after itself.
func ParseTargets(ctx context.Context, values []string) ([]Target, error) {
	targets := make([]Target, 0, len(values))
	for _, v := range values {
		region, hostport, ok := strings.Cut(v, "=")
		if !ok {
			region, hostport = v, v
		}
		ap, err := netaddr.Resolve(ctx, hostport)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", v, err)
		}
		targets = append(targets, Target{Region: region, Addr: ap})
	}
	return targets, nil
}
