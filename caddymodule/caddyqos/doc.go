// Package caddyqos registers the QoS echo modules: the layer4 handler and
// matcher, the gamegate app protocol, and the qos-check command.
package caddyqos
