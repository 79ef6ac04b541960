package cache

import "net/http"

// HeaderValues is the storage of one response's header values, for
// handlers that serve pre-built answers without formatting per request.
//
// A header map's value slices belong to that one response: handlers after
// the one that set them (Caddy's header directive replacing text, for one)
// write into them in place, so a slice shared between responses would carry
// one response's edits into every other, and race. One array per response,
// sliced without spare capacity so that appending copies, keeps that to one
// small allocation.
type HeaderValues [6]string

// Set sets h's name to value, stored in slot i (each header its own slot).
func (v *HeaderValues) Set(h http.Header, i int, name, value string) {
	v[i] = value
	h[name] = v[i : i+1 : i+1]
}
