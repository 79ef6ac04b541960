// Package caddygqp registers the GQP modules: the responder (layer4
// handler and gamegate app protocol), its matcher, and the gqp game query
// protocol.
package caddygqp
