// Package store names what gamegate's shared state asks of a store that
// several nodes share, free of any one store (package redisstore is one).
package store

import (
	"errors"
	"time"
)

// ErrUnavailable is matched (errors.Is) by the errors of a store that
// could not be reached or did not answer in time: a request that needs the
// store then fails with 503 and Retry-After rather than 500.
var ErrUnavailable = errors.New("store unavailable")

// ListedServer is a game server a master listed, as the store keeps it
// for every node: its address (netip.AddrPort's form), how long until it
// expires, and the master's own record of it.
type ListedServer struct {
	Addr  string
	TTL   time.Duration
	Value []byte
}

// ListCursor is where a node stands in a shared list's changes: the
// list's epoch (a new one when the store lost the list) and the sequence
// number of the last change read.
type ListCursor struct {
	Epoch string
	Seq   int64
}

// Registration outcomes of a store's RegisterServer.
const (
	Registered      = 0 // a server new to the list
	Refreshed       = 1 // a server listed already
	ListFull        = 2 // refused: the list holds its maximum
	ListAddressFull = 3 // refused: the list holds its maximum from the server's IP address
)
