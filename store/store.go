// Package store names what gamegate's shared state asks of a store that
// several nodes share, free of any one store (package redisstore is one).
package store

import "errors"

// ErrUnavailable is matched (errors.Is) by the errors of a store that
// could not be reached or did not answer in time: a request that needs the
// store then fails with 503 and Retry-After rather than 500.
var ErrUnavailable = errors.New("store unavailable")
