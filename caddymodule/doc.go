// Package caddymodule registers gamegate's Caddy modules: the glue between
// Caddy (and caddy-l4) and the protocol behaviour in handlers/. It holds
// module structs, their provisioning and validation, and Caddyfile parsing;
// no protocol logic.
//
// Notes on caddy-l4's UDP model, which every layer4 handler here respects:
// caddy-l4 runs one goroutine per remote address, fed from a channel of five
// datagrams. A handler therefore loops on Read until it returns io.EOF (the
// server's idle timeout): returning after one datagram would lose the ones
// queued behind it, and a handler that stops reading stalls the whole port.
// Handlers never call ReadFrom or SetDeadline on the shared socket; to send to
// another client they keep its net.Addr and WriteTo through
// cx.Conn.(net.PacketConn). Matchers read once (or use MatchingBytes): a first
// datagram longer than caddy-l4's 2 KiB matching chunk leaves bytes with no
// frame boundary, and a matcher that loops on reads would spin on it.
package caddymodule
