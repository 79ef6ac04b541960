// Package caddymodule registers gamegate's Caddy modules: the glue between
// Caddy (and caddy-l4) and the protocol behaviour in handlers/. It holds
// module structs, their provisioning and validation, and Caddyfile parsing;
// no protocol logic.
//
// The layer4 handlers of datagram protocols are one adapter,
// serveDatagrams, which follows caddy-l4's UDP model: one goroutine per
// remote address reading until the association ends (readDatagrams), every
// send through the shared socket, matchers that read once.
// CONTRIBUTING.md explains why, and what it costs.
package caddymodule
