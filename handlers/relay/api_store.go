package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	wirerelay "github.com/gamegate/gamegate/wire/relay"
)

// Storage keys. A join code's record carries what /v1/join answers, so a
// join needs one read; an allocation's record carries what /v1/joincode
// needs and the join code it was last given.
const (
	apiAllocationsPrefix = "gamegate/relay/allocations"
	apiJoinCodesPrefix   = "gamegate/relay/joincodes"
)

// APIStore is the key-value storage that allocations and join codes live in;
// API instances sharing one store share their join codes. Load returns an
// error matching fs.ErrNotExist for a missing key, Delete of a missing key
// is not an error, and List returns full keys. Caddy's storage modules
// (certmagic.Storage) satisfy it.
type APIStore interface {
	Store(ctx context.Context, key string, value []byte) error
	Load(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, path string, recursive bool) ([]string, error)
}

// Sweep deletes the expired allocation and join code records of the store,
// whoever wrote them, and returns how many it deleted. Records that cannot
// be read as ours are left alone.
func (a *API) Sweep(ctx context.Context) (int, error) {
	now := a.cfg.Now()
	deleted := 0
	for _, prefix := range []string{apiAllocationsPrefix, apiJoinCodesPrefix} {
		keys, err := a.cfg.Store.List(ctx, prefix, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return deleted, err
		}
		for _, key := range keys {
			b, err := a.cfg.Store.Load(ctx, key)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return deleted, err
			}
			var rec struct {
				Expires time.Time `json:"expires"`
			}
			if json.Unmarshal(b, &rec) != nil || rec.Expires.IsZero() || now.Before(rec.Expires) {
				continue
			}
			if err := a.cfg.Store.Delete(ctx, key); err != nil {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, nil
}

// storedAllocation is an allocation's record, under
// gamegate/relay/allocations/<uuid>.
type storedAllocation struct {
	ConnectionData []byte    `json:"connectionData"`
	Region         string    `json:"region"`
	Expires        time.Time `json:"expires"`
	JoinCode       string    `json:"joinCode,omitempty"`
	// Owner is the proof (ownerProof) a /v1/joincode request must match.
	Owner string `json:"owner,omitempty"`
	// Relay is the host:port of the relay the allocation is on, where
	// its joiners' allocations are made too. Records written before relays
	// were recorded have none: joins then use the joining node's relay.
	Relay string `json:"relay,omitempty"`
}

// storedJoinCode is a join code's record, under
// gamegate/relay/joincodes/<CODE>.
type storedJoinCode struct {
	AllocationID   string    `json:"allocationId"`
	ConnectionData []byte    `json:"connectionData"`
	Region         string    `json:"region"`
	Expires        time.Time `json:"expires"`
	Relay          string    `json:"relay,omitempty"` // as storedAllocation's
}

func allocationKey(id wirerelay.AllocationID) string { return apiAllocationsPrefix + "/" + id.String() }
func joinCodeKey(code string) string                 { return apiJoinCodesPrefix + "/" + code }

func (a *API) store(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.cfg.Store.Store(ctx, key, b)
}

// load reads the record at key into v; found is false if there is none.
func (a *API) load(ctx context.Context, key string, v any) (found bool, err error) {
	b, err := a.cfg.Store.Load(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("record %s: %w", key, err)
	}
	return true, nil
}

// keyedMutex is a set of mutexes by key, each existing while it is held or
// waited for.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// lock locks key's mutex and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyedEntry)
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
