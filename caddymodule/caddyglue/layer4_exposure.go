package caddyglue

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"weak"

	"github.com/caddyserver/caddy/v2"
	"github.com/mholt/caddy-l4/layer4"
	"go.uber.org/zap"
)

// gamegate's UDP handlers are also caddy-l4 handlers, for ports that mix
// them into layer4 routes. caddy-l4 v0.1.2 serves UDP with a goroutine per
// source address and can deadlock a port under a flood (CONTRIBUTING.md,
// "caddy-l4's UDP model"), so a layer4 UDP server running them beyond
// loopback gets a warning when its configuration starts.

// layer4UDPHandlers are the names of gamegate's layer4 UDP handlers.
var layer4UDPHandlers = []string{"a2s_shield", "gqp", "qos", "relay"}

// layer4Server is what the warning looks at of one layer4 server.
type layer4Server struct {
	name     string
	listen   []string // as configured
	handlers []string // gamegate's UDP handlers in its routes, subroutes included
}

// layer4Exposure is a layer4 server that runs gamegate's UDP handlers on a
// UDP address beyond loopback.
type layer4Exposure struct {
	server   string
	address  string
	handlers []string
}

// exposedLayer4UDP returns the servers that run gamegate's UDP handlers and
// listen on UDP beyond loopback (an unspecified host such as 0.0.0.0 or
// ":27015", a non-loopback IP or a host name), with the first such address,
// in the order of their names.
func exposedLayer4UDP(servers []layer4Server) []layer4Exposure {
	var out []layer4Exposure
	for _, s := range servers {
		if len(s.handlers) == 0 {
			continue
		}
		var udp []string
		for _, a := range s.listen {
			if isUDPAddress(a) {
				udp = append(udp, a)
			}
		}
		if addr, beyond := beyondLoopback(udp); beyond {
			out = append(out, layer4Exposure{server: s.name, address: addr, handlers: s.handlers})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].server < out[j].server })
	return out
}

// isUDPAddress reports whether a listen address is a UDP one (udp/, udp4/
// or udp6/). One that does not parse is taken as UDP, so it is checked.
func isUDPAddress(a string) bool {
	na, err := caddy.ParseNetworkAddress(caddy.NewReplacer().ReplaceKnown(a, ""))
	return err != nil || strings.HasPrefix(na.Network, "udp")
}

// layer4HandlersIn returns the gamegate UDP handlers named in a route's
// handlers' JSON, looking into every object (so subroutes count), sorted
// and without repeats.
func layer4HandlersIn(raw []json.RawMessage, found []string) []string {
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if name, ok := v["handler"].(string); ok && slices.Contains(layer4UDPHandlers, name) && !slices.Contains(found, name) {
				found = append(found, name)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, r := range raw {
		var v any
		if json.Unmarshal(r, &v) == nil {
			walk(v)
		}
	}
	slices.Sort(found)
	return found
}

// layer4Warned is the layer4 app last checked: each configuration's app is
// checked once, by the first of gamegate's handlers provisioned in it.
var layer4Warned struct {
	mu  sync.Mutex
	app weak.Pointer[layer4.App]
}

// WarnExposedLayer4 logs, once per configuration, a warning for each layer4
// server that runs gamegate's UDP handlers beyond loopback. Each of those
// handlers calls it from Provision. The first one provisioned in an app
// sees every route that holds one of them still as JSON: Caddy drops a
// route's handler JSON only once it has provisioned them all, and no route
// provisioned before held one.
func WarnExposedLayer4(ctx caddy.Context) {
	var app *layer4.App
	for _, m := range ctx.Modules() {
		if a, ok := m.(*layer4.App); ok {
			app = a
		}
	}
	if app == nil {
		return
	}
	layer4Warned.mu.Lock()
	seen := layer4Warned.app.Value() == app
	layer4Warned.app = weak.Make(app)
	layer4Warned.mu.Unlock()
	if seen {
		return
	}
	var servers []layer4Server
	for name, s := range app.Servers {
		var handlers []string
		for _, r := range s.Routes {
			handlers = layer4HandlersIn(r.HandlersRaw, handlers)
		}
		servers = append(servers, layer4Server{name: name, listen: s.Listen, handlers: handlers})
	}
	logger := caddy.Log().Named("layer4.gamegate")
	for _, e := range exposedLayer4UDP(servers) {
		logger.Warn("a layer4 UDP server runs gamegate handlers beyond loopback: caddy-l4 serves UDP with "+
			"goroutines per source address until idle_timeout, so spoofed sources cost memory, and a flood can "+
			"deadlock the port (caddy-l4 v0.1.2); serve internet-facing UDP ports with the gamegate app "+
			"(gamegate { udp <address> { ... } }), which takes the same handlers",
			zap.String("server", e.server), zap.String("address", e.address), zap.Strings("handlers", e.handlers))
	}
}
