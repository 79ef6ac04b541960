package discovery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gamegate/gamegate/internal/testutil"
)

// memShared is a SharedStore in memory that fails while down.
type memShared struct {
	mu   sync.Mutex
	m    map[string][]byte
	down bool
}

func (s *memShared) check() error {
	if s.down {
		return errors.New("store down")
	}
	return nil
}

func (s *memShared) Store(_ context.Context, key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	s.m[key] = append([]byte(nil), v...)
	return nil
}

func (s *memShared) Load(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	v, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, fs.ErrNotExist)
	}
	return v, nil
}

func (s *memShared) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	delete(s.m, key)
	return nil
}

func (s *memShared) List(_ context.Context, path string, _ bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, path+"/") {
			keys = append(keys, k)
		}
	}
	if keys == nil {
		return nil, fs.ErrNotExist
	}
	sort.Strings(keys)
	return keys, nil
}

// Two nodes' overrides on one store: a change on one is served by the
// other with the same ETag; with the store down, a change fails and
// changes nothing, and answers go on.
func TestSharedOverrides(t *testing.T) {
	store := &memShared{m: map[string][]byte{}}
	var services []*Service
	var overrides []*Overrides
	for range 2 {
		o := NewOverrides()
		o.Share(store, "default", nil)
		t.Cleanup(o.Unshare)
		s, err := NewService(Config{Fleets: configured(map[string][]Server{"f": seedServers}), Overrides: o})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(s.Stop)
		services, overrides = append(services, s), append(overrides, o)
	}
	before := get(services[1], "f").Header().Get("ETag")
	if err := overrides[0].Set("f", seedServers[:1]); err != nil {
		t.Fatal(err)
	}
	etag := get(services[0], "f").Header().Get("ETag")
	testutil.WaitFor(t, "the other node to serve the change", func() bool {
		return get(services[1], "f").Header().Get("ETag") == etag
	})
	if etag == before {
		t.Fatal("the change did not change the ETag")
	}

	store.mu.Lock()
	store.down = true
	store.mu.Unlock()
	if err := overrides[1].Set("f", seedServers); !errors.Is(err, ErrSharedUnavailable) {
		t.Fatalf("Set with the store down: got %v, want ErrSharedUnavailable", err)
	}
	if _, err := overrides[1].Delete("f"); !errors.Is(err, ErrSharedUnavailable) {
		t.Fatalf("Delete with the store down: got %v, want ErrSharedUnavailable", err)
	}
	time.Sleep(2 * SharedPoll) // polls while down change nothing
	for i, s := range services {
		if got := get(s, "f").Header().Get("ETag"); got != etag {
			t.Fatalf("node %d with the store down: ETag %s, want %s", i, got, etag)
		}
	}

	store.mu.Lock()
	store.down = false
	store.mu.Unlock()
	if _, err := overrides[1].Delete("f"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the first node to serve the deletion", func() bool {
		return get(services[0], "f").Header().Get("ETag") == before
	})
}

// An admin-set fleet is kept in the shared store as Server encodes
// untagged ({"LocationID":…}), as every version so far wrote it: a node
// reads the fleets older ones stored, and they read its own.
func TestSharedFleetsKeepTheirEncoding(t *testing.T) {
	const stored = `[{"LocationID":123,"RegionID":"4f7d1d1a-a565-40b4-955a-ff0257d7ed3b","IPv4":"1.1.1.1","IPv6":"","Port":9000}]`
	const prefix = "gamegate/discovery/default"
	store := &memShared{m: map[string][]byte{prefix + "/version": []byte("older"), prefix + "/fleets/f": []byte(stored)}}
	o := NewOverrides()
	o.Share(store, "default", nil)
	t.Cleanup(o.Unshare)
	testutil.WaitFor(t, "the stored fleet to be read", func() bool {
		got, ok := o.Get("f")
		return ok && len(got) == 1 && got[0] == seedServers[0]
	})
	if err := o.Set("g", seedServers[:1]); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	written := string(store.m[prefix+"/fleets/g"])
	store.mu.Unlock()
	if written != stored {
		t.Fatalf("stored %s, want %s", written, stored)
	}
}
