// Package caddymodule holds gamegate's Caddy glue, laid out as caddy-l4
// lays out its modules: a package per module family, each registering its
// modules (structs, provisioning, Caddyfile parsing, matchers, metrics),
// over the behaviour in handlers/. The root package gamegate blank-imports
// every family, as caddy-l4's imports.go does.
//
//	caddyglue       shared glue: Caddyfile helpers and parse ranges, renamed
//	                options, metrics helpers, the caddy-l4 datagram adapter
//	                and matcher body, exposure warnings, started hooks
//	caddyapp        the gamegate app and its UDP servers
//	caddyqos        QoS echo: handler, matcher, app protocol, qos-check
//	caddyrelay      relay: handler, matcher, app protocol, allocations API,
//	                relay-check
//	caddygqp        GQP responder: handler, matcher, app protocol, and the
//	                gqp query protocol
//	caddya2s        the A2S shield and the a2s query protocol
//	caddymaster     master server, server_list, server_browser
//	caddydiscovery  QoS discovery and its admin API
//	caddyquery      game_query, its protocols, catalogue and games command
//	caddyfreeciv    the Freeciv guard and the freeciv query protocol
//	caddystorage    the Redis storage
//	caddycommands   the modules command
//
// No family imports another except through an exported registry: the
// game query protocols register with caddyquery, the server lists read
// game_query's gateways through caddyquery's gateway registry, and the
// app loads its protocols by module ID.
//
// This package itself holds only the tests that need every family: the
// Caddyfile adaptation and invalid-configuration goldens (testdata/), the
// metric catalogue, the configuration fuzzers.
package caddymodule
