// Package testutil holds helpers shared by gamegate's tests that do not need
// Caddy: loopback UDP clients and responders, free ports, spec vectors, a
// manual clock and a real Freeciv server. It imports nothing of Caddy, so the
// codec and handler test binaries stay small; the in-process Caddy lives in
// testutil/testcaddy.
package testutil
