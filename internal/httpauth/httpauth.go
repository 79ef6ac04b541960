// Package httpauth checks the API keys (bearer tokens) of HTTP requests,
// the one way every gamegate HTTP handler does it.
//
// A request presents a key as "Authorization: Bearer <key>" (the scheme in
// any case) or as "X-Api-Key: <key>"; when it sends both, the Authorization
// header is the one checked. Keys are compared as SHA-256 digests in
// constant time against every configured key, so neither the content nor
// the length of a configured key leaks through the time an answer takes.
// A request without a valid key is answered 401 with
// "WWW-Authenticate: Bearer" (RFC 6750); refusing a client for who it is
// rather than what it presents (an address allow-list) is 403 and is not
// this package's business.
package httpauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// Challenge is the WWW-Authenticate value sent with 401.
const Challenge = "Bearer"

// Keys is a set of accepted API keys. The zero value (and nil) accepts
// every request: no key is required.
type Keys struct {
	sums [][sha256.Size]byte
}

// New returns the set of keys; an empty key is an error, because an unset
// variable must not turn into a key that matches an absent header.
func New(keys ...[]byte) (*Keys, error) {
	k := &Keys{sums: make([][sha256.Size]byte, 0, len(keys))}
	for _, key := range keys {
		if len(key) == 0 {
			return nil, errors.New("an API key is empty")
		}
		k.sums = append(k.sums, sha256.Sum256(key))
	}
	return k, nil
}

// Required reports whether any key is configured.
func (k *Keys) Required() bool { return k != nil && len(k.sums) > 0 }

// Presented returns the key r presents: the credentials of an
// "Authorization: Bearer" header, else the X-Api-Key header, else "".
func Presented(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, cred, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		return strings.TrimSpace(cred)
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

// Allow reports whether r presents one of the keys, or no key is required.
func (k *Keys) Allow(r *http.Request) bool {
	if !k.Required() {
		return true
	}
	return k.Match(Presented(r))
}

// Match reports whether key is one of the keys, comparing SHA-256 digests
// in constant time against every one of them. The empty key never matches.
func (k *Keys) Match(key string) bool {
	if k == nil || key == "" {
		return false
	}
	sum := sha256.Sum256([]byte(key))
	match := 0
	for i := range k.sums {
		match |= subtle.ConstantTimeCompare(sum[:], k.sums[i][:])
	}
	return match == 1
}

// SetChallenge sets the WWW-Authenticate header a 401 answer carries.
func SetChallenge(h http.Header) { h.Set("WWW-Authenticate", Challenge) }
