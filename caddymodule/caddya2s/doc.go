// Package caddya2s registers the A2S modules: the A2S shield (layer4
// handler, matcher and gamegate app protocol) and the a2s game query
// protocol.
package caddya2s
