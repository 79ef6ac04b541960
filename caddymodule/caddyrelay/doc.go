// Package caddyrelay registers the relay modules: the layer4 handler and
// matcher, the gamegate app protocol, the allocations API handler, and the
// relay-check command.
package caddyrelay
