package discovery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/gamegate/gamegate/internal/periodic"
	"go.uber.org/zap"
)

// SharedStore is a key-value store that several gamegate nodes share
// (Caddy's storage redis). Load returns an error matching fs.ErrNotExist
// for a missing key; List returns full keys. certmagic.Storage satisfies
// it.
type SharedStore interface {
	Store(ctx context.Context, key string, value []byte) error
	Load(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, path string, recursive bool) ([]string, error)
}

// sharedApplier is a SharedStore that writes several changes as one
// (storage redis does): a node then never reads a fleet changed without
// its new version, nor a version without its change.
type sharedApplier interface {
	Apply(ctx context.Context, puts map[string][]byte, deletes []string) error
}

// SharedPoll is how often a node reads the shared store for admin changes
// made on other nodes: one read of a version key when nothing changed.
const SharedPoll = time.Second

// sharedTimeout bounds each change written to the shared store, should the
// store not bound its own operations.
const sharedTimeout = 5 * time.Second

// ErrSharedUnavailable is matched by an admin change that could not be
// written to the shared store; nothing was changed.
var ErrSharedUnavailable = errors.New("the shared store is unavailable")

// sharing is an Overrides' link to its shared store: admin changes are
// written there first, and every node reads them back.
type sharing struct {
	store  SharedStore
	prefix string // gamegate/discovery/<name>
	logger *zap.Logger
	stop   chan struct{}
	done   chan struct{}

	version string // the version last read; "" before the first read
	down    bool   // the last read failed (logged once per outage)
}

// Share keeps o in store under name, shared with every node that shares
// the store and the name: o's admin changes are written to the store
// before they apply, and the changes of other nodes are read from it every
// SharedPoll, replacing o's content (the store is authoritative). Calling
// it again replaces the store; Unshare stops.
func (o *Overrides) Share(store SharedStore, name string, logger *zap.Logger) {
	if logger == nil {
		logger = zap.NewNop()
	}
	o.mu.Lock()
	old := o.shared
	o.shared = &sharing{store: store, prefix: "gamegate/discovery/" + name, logger: logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	sh := o.shared
	o.mu.Unlock()
	if old != nil {
		close(old.stop)
		<-old.done
	}
	go o.poll(sh)
}

// Unshare stops reading the shared store; o keeps its content.
func (o *Overrides) Unshare() {
	o.mu.Lock()
	sh := o.shared
	o.shared = nil
	o.mu.Unlock()
	if sh != nil {
		close(sh.stop)
		<-sh.done
	}
}

func (o *Overrides) poll(sh *sharing) {
	defer close(sh.done)
	o.sync(sh)
	periodic.Run(sh.stop, SharedPoll, func() { o.sync(sh) })
}

// sync reads the store's version and, if it changed, every fleet.
func (o *Overrides) sync(sh *sharing) {
	// Changes made here wait for the read, so that it cannot undo them.
	o.writes.Lock()
	defer o.writes.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	fleets, version, err := sh.read(ctx)
	if err != nil {
		if !sh.down {
			sh.down = true
			sh.logger.Warn("qos_discovery: the shared store cannot be read; serving the admin-set fleets last read until it can", zap.Error(err))
		}
		return
	}
	if sh.down {
		sh.down = false
		sh.logger.Info("qos_discovery: the shared store can be read again")
	}
	if fleets == nil {
		return // unchanged
	}
	o.mu.Lock()
	if o.shared != sh {
		o.mu.Unlock()
		return
	}
	changed := !maps.EqualFunc(o.m, fleets, slices.Equal[[]Server])
	o.m = fleets
	services := o.attached()
	o.mu.Unlock()
	sh.version = version
	if changed {
		for _, s := range services {
			s.rebuild()
		}
	}
}

// read returns the fleets in the store, or nil if its version is still
// sh.version.
func (sh *sharing) read(ctx context.Context) (map[string][]Server, string, error) {
	b, err := sh.store.Load(ctx, sh.prefix+"/version")
	if errors.Is(err, fs.ErrNotExist) {
		b, err = []byte("none"), nil
	}
	if err != nil {
		return nil, "", err
	}
	version := string(b)
	if version == sh.version {
		return nil, version, nil
	}
	keys, err := sh.store.List(ctx, sh.prefix+"/fleets", false)
	if errors.Is(err, fs.ErrNotExist) {
		keys, err = nil, nil
	}
	if err != nil {
		return nil, "", err
	}
	fleets := make(map[string][]Server, len(keys))
	for _, key := range keys {
		b, err := sh.store.Load(ctx, key)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since listed
		}
		if err != nil {
			return nil, "", err
		}
		var servers []Server
		if err := json.Unmarshal(b, &servers); err != nil {
			sh.logger.Warn("qos_discovery: ignoring an unreadable admin-set fleet in the shared store", zap.String("key", key), zap.Error(err))
			continue
		}
		fleets[key[len(sh.prefix)+len("/fleets/"):]] = servers
	}
	return fleets, version, nil
}

// write stores fleet's list (deleted: deletes it) and a new version, so that
// every node reads the change.
func (sh *sharing) write(fleet string, servers []Server, deleted bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	key := sh.prefix + "/fleets/" + fleet
	var v [16]byte
	_, _ = rand.Read(v[:])
	version := []byte(hex.EncodeToString(v[:]))
	var b []byte
	var err error
	if !deleted {
		if b, err = json.Marshal(servers); err != nil {
			return fmt.Errorf("fleet %q: %w", fleet, err)
		}
	}
	if a, ok := sh.store.(sharedApplier); ok {
		puts := map[string][]byte{sh.prefix + "/version": version}
		var deletes []string
		if deleted {
			deletes = []string{key}
		} else {
			puts[key] = b
		}
		err = a.Apply(ctx, puts, deletes)
	} else {
		// Two writes: the change, then the version that makes nodes
		// read it.
		if deleted {
			err = sh.store.Delete(ctx, key)
		} else {
			err = sh.store.Store(ctx, key, b)
		}
		if err == nil {
			err = sh.store.Store(ctx, sh.prefix+"/version", version)
		}
	}
	if err != nil {
		sh.logger.Warn("qos_discovery: writing an admin change to the shared store", zap.String("fleet", fleet), zap.Error(err))
		return fmt.Errorf("fleet %q: %w", fleet, ErrSharedUnavailable)
	}
	return nil
}
