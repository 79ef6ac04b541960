// Package caddyglue is the Caddy glue every gamegate module family shares:
// Caddyfile helpers and the ranges they read options in, blocks whose
// Config is validated once (ParseConfigBlock), renamed options, metric
// sets, the pool of values that outlive reloads (LivePool), the caddy-l4
// datagram adapter (ServeDatagrams, following caddy-l4's UDP model: one
// goroutine per remote address reading until the association ends, every
// send through the shared socket) and its matcher body, warnings about
// exposed listeners, and hooks run once a configuration has started. It
// holds no module and no protocol logic.
package caddyglue
