package caddyglue

import "github.com/caddyserver/caddy/v2"

// Destructible is a value a LivePool holds: it is destroyed when no
// configuration uses it.
type Destructible interface {
	comparable
	Destruct() error
}

// LivePool holds, by key, values that outlive configuration reloads (a
// caddy.UsagePool: the QoS source tables, the relay binding tables), and
// the set of those alive, for gauges computed when scraped (Sum). A
// reloaded handler takes the value of its key over; the pool destroys a
// value when no configuration holds it.
type LivePool[T Destructible] struct {
	pool *caddy.UsagePool
	live LiveSet[T]
	// onDestruct runs with each value destroyed and its key, if set.
	onDestruct func(key string, value T)
}

// NewLivePool returns an empty pool; onDestruct, if not nil, runs with
// each value the pool destroys and its key, before the value's own
// Destruct. The pool has already forgotten the key then, and a new value
// may have been made under it: onDestruct must undo only what concerns
// the value it is given.
func NewLivePool[T Destructible](onDestruct func(key string, value T)) *LivePool[T] {
	return &LivePool[T]{pool: caddy.NewUsagePool(), onDestruct: onDestruct}
}

// LoadOrNew returns the value held under key, or makes it with newValue;
// either way the caller holds it, and lets go with Release(key).
func (p *LivePool[T]) LoadOrNew(key string, newValue func() (T, error)) (T, error) {
	val, _, err := p.pool.LoadOrNew(key, func() (caddy.Destructor, error) {
		v, err := newValue()
		if err != nil {
			return nil, err
		}
		p.live.Add(v)
		return pooled[T]{v, key, p}, nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return val.(pooled[T]).value, nil
}

// Release lets go of a hold on the value of key: the last one destroys it.
func (p *LivePool[T]) Release(key string) error {
	_, err := p.pool.Delete(key)
	return err
}

// Held reports whether a configuration holds the value of key.
func (p *LivePool[T]) Held(key string) bool {
	_, held := p.pool.References(key)
	return held
}

// Sum adds up f of every live value.
func (p *LivePool[T]) Sum(f func(T) int) int { return p.live.Sum(f) }

// pooled is a value in its pool.
type pooled[T Destructible] struct {
	value T
	key   string
	pool  *LivePool[T]
}

func (e pooled[T]) Destruct() error {
	e.pool.live.Remove(e.value)
	if e.pool.onDestruct != nil {
		e.pool.onDestruct(e.key, e.value)
	}
	return e.value.Destruct()
}
